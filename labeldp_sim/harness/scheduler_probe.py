"""Is there a Dask scheduler at this address?  A handshake with a time-out, before any Client is made.

distributed's own connection waits without a time-out for the peer's
handshake, and takes the first eight bytes of whatever the peer sends for the
length of what follows: a web server behind the address (it waits for a
request) holds a Client forever, another service has it allocate exabytes.
:func:`probe_scheduler` connects the way a Client would (retried for up to the
start-up time-out: a scheduler may still be starting), then wants Dask's
handshake, short, within :data:`HANDSHAKE_TIMEOUT` seconds; it answers it and
closes the connection, so the scheduler sees an ordinary client come and go.
It says what is wrong in one line; :func:`labeldp_sim.harness.cluster.check_scheduler`
turns that into the run's error.
"""

from __future__ import annotations

import asyncio
import re
import time

from labeldp_sim.harness.errors import first_line

__all__ = ["probe_scheduler", "DEFAULT_PORT", "HANDSHAKE_TIMEOUT", "MAX_HANDSHAKE_BYTES"]

# Dask's scheduler port, where an address gives none (distributed itself refuses such an address)
DEFAULT_PORT = 8786
# seconds a service that accepted the connection may take to send Dask's handshake: a scheduler
# sends it at once, from its event loop; a web server (the dashboard's port, 8787) never does
HANDSHAKE_TIMEOUT = 10
# the largest handshake taken for one: a scheduler's is under 100 bytes; another service's first
# bytes read as a length would have distributed allocate up to 2**64 bytes
MAX_HANDSHAKE_BYTES = 1 << 16


def probe_scheduler(address: str, timeout: float) -> tuple:
    """(``address`` with its port, what is wrong with the Dask scheduler there or None when it answered).

    ``address`` is ``scheme://host[:port]`` (tcp, tls, ws, wss); without a
    port, Dask's :data:`DEFAULT_PORT`.  TLS settings come from Dask's
    configuration, as for a Client.  ``timeout`` is ``runner.dask.startup_timeout``;
    the handshake gets :data:`HANDSHAKE_TIMEOUT` seconds of it at most.
    """
    from distributed.comm.addressing import parse_address, parse_host_port, unparse_address, unparse_host_port

    scheme, location = parse_address(address)
    address = unparse_address(scheme, unparse_host_port(*parse_host_port(location, DEFAULT_PORT)))
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # the usual case: no event loop in this thread
        with asyncio.Runner() as runner:  # its own loop; Ctrl-C cancels the probe and is raised here
            problem = runner.run(_handshake(address, timeout))
    else:  # called from a running loop (a notebook): the probe gets a thread and a loop of its own
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            problem = pool.submit(asyncio.run, _handshake(address, timeout)).result()
    return address, problem


async def _handshake(address: str, timeout: float) -> str | None:
    """What is wrong with the Dask scheduler at ``address``, or None when it answered."""
    from distributed.comm import registry
    from distributed.comm.addressing import parse_address
    from distributed.comm.core import FatalCommClosedError
    from distributed.security import Security

    scheme, location = parse_address(address)
    connector = registry.get_backend(scheme).get_connector()
    arguments = Security().get_connection_args("client")
    deadline = time.monotonic() + timeout
    pause = 0.05
    while True:
        try:
            comm = await asyncio.wait_for(connector.connect(location, deserialize=False, **arguments),
                                          max(0.001, deadline - time.monotonic()))
            break
        except FatalCommClosedError as err:  # retrying cannot help (distributed does not either)
            return f"cannot connect to {address} ({_cause(err)}); fix the address or Dask's TLS settings"
        except (OSError, asyncio.TimeoutError) as err:  # refused, unreachable, name unknown
            if time.monotonic() + pause >= deadline:
                cause = _cause(err)
                return (f"no Dask scheduler answered at {address} within {timeout:g} s ({cause}); "
                        "start it or fix the address")
            await asyncio.sleep(pause)
            pause = min(2 * pause, 1.0)
        except Exception as err:  # noqa: BLE001 - TLS without certificates; a web page for a web socket
            return (f"cannot connect to {address} as a Dask client ({_cause(err)}); fix the address "
                    "(or, for tls and wss, Dask's TLS settings)")
    wait = min(HANDSHAKE_TIMEOUT, timeout)
    not_dask = (f"{address} accepted the connection but is not a Dask scheduler (%s); fix the "
                f"address (a scheduler listens on port {DEFAULT_PORT} unless told otherwise; "
                "8787 is its dashboard)")
    try:
        info = await asyncio.wait_for(_read_handshake(comm), wait)
        if not (isinstance(info, dict) and "python" in info and "pickle-protocol" in info):
            return not_dask % "its first message is not Dask's handshake"
        await asyncio.wait_for(comm.write(comm.handshake_info()), wait)
    except asyncio.TimeoutError:
        return not_dask % f"no Dask handshake within {wait:g} s"
    except _NotDask as err:
        return not_dask % err
    except Exception as err:  # noqa: BLE001 - a peer that speaks another protocol: closed, garbled
        return not_dask % first_line(err)
    finally:
        comm.abort()
    return None


def _cause(err: BaseException) -> str:
    """``ConnectionRefusedError: [Errno 111] Connection refused``, without distributed's wrapping."""
    text = re.sub(r"in <[^<>]*>: ", "", first_line(err) if str(err) else type(err).__name__)
    return re.sub(r"^(CommClosedError|OSError): (?=\w+Error: )", "", text)


class _NotDask(Exception):
    """The peer's first bytes are not the start of a Dask message."""


async def _read_handshake(comm):
    """The peer's first message, once its announced length is a handshake's, not any length."""
    from distributed.comm.tcp import TCP

    if isinstance(comm, TCP):  # tcp and tls: a length of 8 bytes, then the frames
        import struct

        stream = comm.stream
        head = await stream.read_bytes(8, partial=False)
        (length,) = struct.unpack("<Q", head)
        if not 0 < length <= MAX_HANDSHAKE_BYTES:
            raise _NotDask(f"its first 8 bytes, {bytes(head)!r}, announce {length:,} bytes")
        body = await stream.read_bytes(length, partial=False)
        return await _frames_message(body)
    return await comm.read()  # ws(s): a web socket carries whole messages, there is no length to trust


async def _frames_message(body: bytes):
    from distributed.comm.utils import from_frames
    from distributed.protocol.utils import unpack_frames

    try:
        frames = unpack_frames(body)
    except Exception as err:  # noqa: BLE001
        raise _NotDask(f"garbled frames: {first_line(err)}") from None
    return await from_frames(frames, deserialize=False)
