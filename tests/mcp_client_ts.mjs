// The MCP TypeScript SDK 2.x (npm @modelcontextprotocol/client, version negotiation in 'auto'
// mode: 2026-07-28 where the server offers it) against the oxp-lambda binary. Run by
// tests/mcp_client_ts.rs with Node 22 and the SDK that scripts/test installs into node_modules.
// Prints one `ok   <what>` line per check; exits non-zero at the first that fails.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

function check(cond, what) {
  if (!cond) {
    console.log(`FAIL ${what}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

async function connect(url, asked) {
  const client = new Client(
    { name: 'oxp-lambda-tests', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params);
    const choice = request.params.requestedSchema.properties.choice.enum[1];
    return { action: 'accept', content: { choice } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const url = process.argv[2];
const asked = [];
const client = await connect(url, asked);
const version = client.getNegotiatedProtocolVersion();
check(version === '2026-07-28', `auto mode negotiates 2026-07-28: ${version}`);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
check(names.includes('Calculator_Add') && names.includes('Demo_Confirm'), `tools/list: ${names}`);
const stamp = tools.find((t) => t.name === 'System_GetTimestamp');
check(JSON.stringify(stamp.inputSchema.properties) === '{}', 'a tool without input lists properties {}');

const sum = await client.callTool({ name: 'Calculator_Add', arguments: { a: 10, b: 5 } });
check(!sum.isError && sum.content[0].text === '15', 'a call answers its value');

const image = await client.callTool({ name: 'Demo_Image', arguments: {} });
check(JSON.stringify(image.content.map((c) => c.type)) === '["text","image"]', 'content items are content blocks');

const failed = await client.callTool({ name: 'Doorbell_Ring', arguments: { doorbell_id: 'nope' } });
check(failed.isError === true, 'a tool error is isError');

// A tool asks the user: the SDK drives the input_required round through its handler.
const confirmed = await client.callTool({
  name: 'Demo_Confirm',
  arguments: { prompt: 'Deploy?', choices: ['Yes', 'No'], default: 0 },
});
check(asked.length === 1 && asked[0].message === 'Deploy?', 'the question reaches the elicitation handler');
check(
  !confirmed.isError && confirmed.structuredContent.selected === 1 && confirmed.structuredContent.choice === 'No',
  `the call completes with the user's choice: ${JSON.stringify(confirmed)}`,
);

// Progress: the tool's notifications reach onprogress, increasing, before the result.
const seen = [];
const slept = await client.callTool(
  { name: 'Demo_Sleep', arguments: { ms: 300 } },
  { onprogress: (p) => seen.push(p) },
);
const done = seen.map((p) => p.progress);
check(
  !slept.isError && seen.length === 10 && done.every((d, i) => i === 0 || d > done[i - 1])
    && seen[9].progress === 300 && seen[9].total === 300 && seen[0].message.startsWith('slept '),
  `progress reaches onprogress, increasing, before the result: ${JSON.stringify(seen)}`,
);

// A call its caller aborts is cancelled: the server's one slot is free at once.
const controller = new AbortController();
setTimeout(() => controller.abort(), 500);
let aborted = false;
try {
  await client.callTool({ name: 'Demo_Sleep', arguments: { ms: 20000 } }, { signal: controller.signal });
} catch {
  aborted = true;
}
check(aborted, 'the aborted call rejects');
const started = performance.now();
const after = await client.callTool({ name: 'Calculator_Add', arguments: { a: 1, b: 2 } });
const waited = performance.now() - started;
check(!after.isError && waited < 1000, `after an aborted call the slot is free within 1 s (${waited.toFixed(0)} ms)`);
await client.close();
