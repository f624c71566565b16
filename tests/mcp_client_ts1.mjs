// The MCP TypeScript SDK 1.x (npm @modelcontextprotocol/sdk), the SDK most deployed MCP clients
// are built on, against the oxp-lambda binary at the revision it negotiates (2025-11-25). Run by
// tests/mcp_client_ts1.rs with Node 22 and the SDK that scripts/test installs into node_modules.
// Prints one `ok   <what>` line per check; exits non-zero at the first that fails.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

function check(cond, what) {
  if (!cond) {
    console.log(`FAIL ${what}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

const [url, taskOnly] = process.argv.slice(2);
const client = new Client(
  { name: 'oxp-lambda-tests', version: '1.0.0' },
  { capabilities: { elicitation: {}, sampling: {} } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params);
  const choice = request.params.requestedSchema.properties.choice.enum[1];
  return { action: 'accept', content: { choice } };
});
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: 'assistant',
  content: { type: 'text', text: 'A fox jumps a dog.' },
  model: 'test-model',
}));
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
check(transport.protocolVersion === '2025-11-25', `negotiates 2025-11-25: ${transport.protocolVersion}`);
check(client.getServerCapabilities().extensions === undefined, 'initialize lists no extension');

const { tools } = await client.listTools();
check(tools.some((t) => t.name === taskOnly), `tools/list lists ${taskOnly}`);
check(tools.every((t) => t.execution === undefined), 'no tool is listed with 2025-11-25 task support');

const sum = await client.callTool({ name: 'Calculator_Add', arguments: { a: 10, b: 5 } });
check(!sum.isError && sum.content[0].text === '15', 'a call answers its value');

// A tool served only as a task (2026-07-28's extension): the server says which capability it
// needs; the SDK does not refuse the call itself, as it did when the tool was listed
// `execution.taskSupport: "required"`.
let refusal;
try {
  await client.callTool({ name: taskOnly, arguments: {} });
} catch (e) {
  refusal = e;
}
check(refusal && refusal.code === -32021, `a task-only tool is the server's -32021: ${refusal}`);

const confirmed = await client.callTool({
  name: 'Demo_Confirm',
  arguments: { prompt: 'Deploy?', choices: ['Yes', 'No'], default: 0 },
});
check(asked.length === 1 && asked[0].message === 'Deploy?', 'the question reaches the elicitation handler');
check(confirmed.structuredContent?.choice === 'No', `the user's choice: ${JSON.stringify(confirmed)}`);

const summary = await client.callTool({
  name: 'Demo_Summarize',
  arguments: { text: 'The quick brown fox jumps over the lazy dog.' },
});
check(summary.structuredContent?.summary === 'A fox jumps a dog.', 'sampling reaches the client');

const progress = [];
const slept = await client.callTool({ name: 'Demo_Sleep', arguments: { ms: 300 } }, undefined, {
  onprogress: (p) => progress.push(p),
});
check(!slept.isError && progress.length >= 2, `progress while it runs: ${progress.length} notifications`);

const stamp = await client.callTool({ name: 'Demo_Image', arguments: {} });
check(JSON.stringify(stamp.content.map((c) => c.type)) === '["text","image"]', 'content items are content blocks');
await client.close();
console.log('done');
