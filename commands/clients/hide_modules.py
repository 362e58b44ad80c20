"""A pytest plugin for redis-py's suite against an engine with the module loaded.

redis-py's conftest reads the server's module list at the start of the session, and the
version gate on a Bloom filter test of test_bloom.py (evaluated when the file is collected)
fails the whole file unless a module named "bf" (RedisBloom) is in it. The cuckoo filter tests
never look at the list. This plugin removes the list after the conftest has read it, so that
the gate skips its Bloom filter test as it does on a server without modules; the test files
and the conftest stay as they are.
"""

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    session.config.REDIS_INFO.pop("modules", None)
