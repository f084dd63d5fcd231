"""Hosts made of network namespaces, and a small TCP load balancer, for multi-host tests.

:class:`Hosts` makes one namespace per host, each joined to a bridge of its own in the
test's namespace by a veth pair, addresses ``10.<n>.0.<i>/24`` (the bridge is
``.1``); :meth:`Hosts.cut` takes a host's link down (the host is cut off: its packets
are dropped, nothing is refused) and :meth:`Hosts.close` removes everything it made,
and only that.  :class:`Balancer` forwards TCP connections round robin to the backends
that accept one within its connect timeout.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
import uuid


def namespaces_unavailable() -> str | None:
    """Why hosts cannot be made here (None when they can)."""
    if shutil.which("ip") is None:
        return "needs iproute2 (ip)"
    if os.geteuid() != 0:
        return "needs root (CAP_NET_ADMIN) to make network namespaces"
    probe = f"btp{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.decode().strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Hosts:
    """Network namespaces on one bridge; addresses by host name."""

    def __init__(self, names: list[str]) -> None:
        self.tag = uuid.uuid4().hex[:5]
        self.subnet = 100 + int(self.tag, 16) % 100
        self.bridge = f"btb{self.tag}"
        self.gateway = f"10.{self.subnet}.0.1"
        self.address: dict[str, str] = {}
        self._links: dict[str, str] = {}
        self._namespaces: list[str] = []
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i, name in enumerate(names, start=10):
                self._add(name, i)
        except BaseException:
            self.close()
            raise

    def _add(self, name: str, index: int) -> None:
        namespace, outer, inner = f"bt{self.tag}{name}", f"bto{self.tag}{index}", "eth0"
        _ip("netns", "add", namespace)
        self._namespaces.append(namespace)
        _ip("link", "add", outer, "type", "veth", "peer", "name", f"bti{self.tag}{index}")
        self._links[name] = outer
        _ip("link", "set", f"bti{self.tag}{index}", "netns", namespace)
        _ip("-n", namespace, "link", "set", f"bti{self.tag}{index}", "name", inner)
        address = f"10.{self.subnet}.0.{index}"
        _ip("-n", namespace, "addr", "add", f"{address}/24", "dev", inner)
        _ip("-n", namespace, "link", "set", inner, "up")
        _ip("-n", namespace, "link", "set", "lo", "up")
        _ip("-n", namespace, "route", "add", "default", "via", self.gateway)
        _ip("link", "set", outer, "master", self.bridge)
        _ip("link", "set", outer, "up")
        self.address[name] = address

    def prefix(self, name: str) -> list[str]:
        """The command prefix that runs a program on host ``name``."""
        return ["ip", "netns", "exec", f"bt{self.tag}{name}"]

    def cut(self, name: str) -> None:
        """Cut host ``name`` off the network (its link down)."""
        _ip("link", "set", self._links[name], "down")

    def close(self) -> None:
        for namespace in self._namespaces:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        for link in self._links.values():
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


class Balancer(threading.Thread):
    """A TCP load balancer on ``127.0.0.1:port``: round robin over the backends that
    accept a connection within ``connect_timeout`` seconds (others are skipped for 2 s)."""

    def __init__(self, port: int, backends: list[tuple[str, int]], connect_timeout: float = 0.5):
        super().__init__(daemon=True)
        self.port, self.backends, self.connect_timeout = port, backends, connect_timeout
        self._next = 0
        self._down_until: dict[tuple[str, int], float] = {}
        #: backend -> connections it did not accept in time
        self.refused: dict[tuple[str, int], int] = {}
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()

    def run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.port)
        )
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()  # its self-pipe sockets too

    def start(self) -> None:
        super().start()
        self._started.wait(10)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self.join(10)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        now = self._loop.time()
        for _ in range(len(self.backends)):
            backend = self.backends[self._next % len(self.backends)]
            self._next += 1
            if self._down_until.get(backend, 0.0) > now:
                continue
            try:
                # in this task, not a wait_for's inner one: a connection made as the timeout
                # fires is closed by open_connection's cancellation, never left unowned
                async with asyncio.timeout(self.connect_timeout):
                    return await asyncio.open_connection(*backend)
            except (OSError, TimeoutError):
                self._down_until[backend] = now + 2.0
                self.refused[backend] = self.refused.get(backend, 0) + 1
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream = await self._connect()
        if upstream is None:
            writer.close()
            return
        up_reader, up_writer = upstream

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
