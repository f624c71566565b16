"""moto's server as the tests run it (scripts/test), with DynamoDB's writes made atomic.

moto checks a write's ConditionExpression and then applies the write, and its server answers
requests on threads of their own: two conditional puts of one key at once could both pass
`attribute_not_exists(pk)` and both be applied, where DynamoDB applies one and refuses the other
(seen once in CI: sixteen duplicates of an idempotent call at once, with the DynamoDB store, ran
the tool twice). Here each of DynamoDB's writes holds one lock while moto checks and applies it.
Anything else is moto's own: `python scripts/moto_server.py -H 127.0.0.1 -p PORT`.
"""
import functools
import sys
import threading

from moto.dynamodb.models import DynamoDBBackend
from moto.server import main

WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")

_lock = threading.RLock()


def _atomic(write):
    @functools.wraps(write)
    def locked(*args, **kwargs):
        with _lock:
            return write(*args, **kwargs)

    return locked


for name in WRITES:
    setattr(DynamoDBBackend, name, _atomic(getattr(DynamoDBBackend, name)))

if __name__ == "__main__":
    main(sys.argv[1:])
