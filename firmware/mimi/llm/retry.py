# A model call tried again: backoff with jitter, the answer's retry-after honoured, never once some of the reply
# streamed, and a long wait left to the chain's next profile. Both clients run it (llm/claude.py, llm/openai_chat.py).
import asyncio
import os

from mimi.llm.errors import ModelError
from mimi.net.backoff import Backoff
from mimi.platform import const, log

_MAX_ATTEMPTS = const(4)  # one try plus three retries
_BACKOFF_FIRST_MS = const(500)
_BACKOFF_MAX_MS = const(8000)
_RETRY_AFTER_MAX_S = const(60)
_FAILOVER_WAIT_S = const(10)  # a 429 asking a longer wait goes to the chain's next profile at once


async def retried(attempt, who, fail_fast=False):
    """await attempt(streamed) until it returns: a retryable ModelError is tried again (_MAX_ATTEMPTS in all, with
    backoff and retry-after) while nothing of the reply streamed (streamed[0] stays False). who: the name the
    console's retry line gives; fail_fast: the chain has a next profile, so a 429 asking a wait over
    _FAILOVER_WAIT_S is not waited for."""
    backoff = Backoff(_BACKOFF_FIRST_MS, _BACKOFF_MAX_MS)
    tries = 1
    while True:
        streamed = [False]
        try:
            return await attempt(streamed)
        except ModelError as exc:
            too_long = fail_fast and exc.retry_after is not None and exc.retry_after > _FAILOVER_WAIT_S
            if streamed[0] or not exc.retryable or tries >= _MAX_ATTEMPTS or too_long:
                if exc.retryable and tries > 1 and not streamed[0]:
                    exc.message += " (tried {} times)".format(tries)
                raise
            delay = backoff.next()
            wait = delay + (os.urandom(1)[0] * delay) // 512  # up to +50% jitter
            if exc.retry_after is not None:
                wait = max(wait, min(exc.retry_after, _RETRY_AFTER_MAX_S) * 1000)
            log("{}: {}; retrying in {} ms".format(who, exc.kind, wait))
            await asyncio.sleep(wait / 1000)
            tries += 1
