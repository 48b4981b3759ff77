"""xgboost.dask's asynchronous interface over dgbdt.dask's blocking one.

With ``Client(asynchronous=True)`` XGBoost's Dask functions, matrices and estimators return
awaitables. Off its event loop an asynchronous distributed.Client blocks as a synchronous one
does (distributed runs each call on its loop and waits for it), so a call made on the loop
runs the blocking dgbdt call in a thread (``asyncio.to_thread``, which carries the caller's
context, xgboost.config's settings included), and the loop stays free to serve the client
meanwhile. Off the loop (a synchronous client) nothing changes.
"""
from __future__ import annotations

import asyncio


def on_loop(client) -> bool:
    """Whether ``client`` is asynchronous and this call runs on its event loop."""
    return client is not None and bool(client.asynchronous)


def maybe_awaitable(client, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, or on an asynchronous client's loop an awaitable of it."""
    if on_loop(client):
        return asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)


async def _itself(obj):
    return obj


def awaitable_self(obj):
    """The ``__await__`` of an object that is ready when made (XGBoost's estimators: ``await
    DaskXGBRegressor(...)``)."""
    return _itself(obj).__await__()
