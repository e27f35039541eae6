"""``tuiprof serve``: the terminal app in a browser, one app process per browser page.

Built on textual-serve's pieces (its browser client, ``textual.js`` with xterm.js, and its
``AppService`` wire protocol to a Textual app run under Textual's web driver) inside a
server of our own, because textual-serve's ``Server`` lets anyone who reaches the port start
an app process. Here:

- every request needs a secret: the random token printed in the URL (made once per server
  start, never written anywhere) is exchanged on the first page for a cookie, and the page
  is reloaded without it; a request with neither gets 403 before anything runs, the
  websocket that starts an app process included;
- the server binds to a loopback address unless ``--allow-remote`` is given, and then
  checks the ``Host`` header (a web page elsewhere cannot reach it through DNS rebinding)
  and the websocket's ``Origin`` (nor through a cross-site websocket);
- each websocket (browser page) is one app process in its own process group, ended when the
  page closes, after ``--idle-timeout`` without input, or when the server stops; at most
  ``--max-sessions`` run at once;
- the page loads nothing from elsewhere (textual-serve's own page fetches a web font from
  Google) and its Content-Security-Policy runs only the bundled script; the app's output
  reaches the page only as terminal data that xterm.js draws (trace strings were already
  made inert by the app: ``tui/safe.py``), and the screen-reader rows xterm.js keeps are
  set as text, never as HTML;
- an app's stderr reaches the server's terminal through ``safe_text``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import html
import ipaddress
import json
import os
import re
import secrets
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import textual_serve
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager
from yarl import URL

from tui_prof.render.safe import safe_text

DEFAULT_PORT = 8765
DEFAULT_MAX_SESSIONS = 4
DEFAULT_IDLE_TIMEOUT_S = 1800.0
# The spare's size until its page says its own: the smallest page it serves. Its first
# screen is replayed into the page's terminal; drawn larger than the page it would scroll
# there, and the app's repaint after the resize redraws only what changed.
SPARE_COLUMNS, SPARE_ROWS = 80, 24
QUIT_GRACE_S = 2.0  # a closed page: the app is asked to quit, then ended
STOP_GRACE_S = 0.4  # Ctrl-C: every session ends within a second
STATIC = Path(str(textual_serve.__file__)).resolve().parent / "static"
# Changes to textual.js, each applied where its text occurs exactly once: the rows xterm.js
# keeps for screen readers (plain DOM text: the page is readable by assistive tools and by
# the tests) need screenReaderMode; the web-links add-on would make any text that looks
# like a URL (a kernel or file name from a trace) a live link, so it is not loaded.
JS_PATCHES = (
    (b"allowProposedApi:!0,", b"allowProposedApi:!0,screenReaderMode:!0,"),
    (b"this.terminal.loadAddon(this.weblinksAddon),", b""),
)
STATIC_FILES = {
    "css/xterm.css": "text/css",
    "js/textual.js": "text/javascript",
    "fonts/RobotoMono-VariableFont_wght.ttf": "font/ttf",
    "fonts/RobotoMono-Italic-VariableFont_wght.ttf": "font/ttf",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; connect-src 'self' ws://{host} wss://{host}"
)
PAGE_CSS = """\
@font-face { font-family: 'Roboto Mono'; src: url('/static/fonts/RobotoMono-VariableFont_wght.ttf') format('truetype'); font-style: normal; }
@font-face { font-family: 'Roboto Mono'; src: url('/static/fonts/RobotoMono-Italic-VariableFont_wght.ttf') format('truetype'); font-style: italic; }
html, body { margin: 0; padding: 0; height: 100%; background: #0c181f; overflow: hidden; }
.note { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center; z-index: 10;
        font: 16px 'Roboto Mono', monospace; color: rgba(255, 255, 255, 0.9); text-align: center; padding: 2em; }
body.-first-byte .starting { display: none; }
.ended { display: none; background: #0c181f; }
body.-closed .ended { display: flex; }
.textual-terminal { opacity: 0; }
body.-first-byte .textual-terminal { opacity: 1; }
"""
HOST_HEADER = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")


def is_loopback(host: str) -> bool:
    """``host`` names this machine only: ``localhost`` or a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class ServeOptions:
    """What to serve (the ``tuiprof`` arguments each app process runs) and how."""

    argv: list[str]
    title: str
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    allow_remote: bool = False
    prestart: bool = True  # keep one app started ahead of the next page
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))


def textual_js() -> bytes:
    """textual-serve's browser client with :data:`JS_PATCHES` applied (another textual-serve
    whose text differs is served as it is: no text rows, live links)."""
    data = (STATIC / "js" / "textual.js").read_bytes()
    for old, new in JS_PATCHES:
        if data.count(old) == 1:
            data = data.replace(old, new)
    return data


def page_html(title: str, ws_url: str, font_size: int) -> str:
    """The page: the terminal element textual.js fills, and the starting / ended notes."""
    t, u = html.escape(safe_text(title)), html.escape(ws_url)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{t}</title>
<link rel="stylesheet" href="/static/css/xterm.css"><link rel="stylesheet" href="/static/page.css">
<link rel="icon" href="data:,">
<link rel="preload" href="/static/fonts/RobotoMono-VariableFont_wght.ttf" as="font" type="font/ttf" crossorigin>
<script src="/static/js/textual.js"></script></head>
<body>
<div class="note starting">Starting {t}</div>
<div class="note ended">Session ended: the app quit, the session sat idle too long, or the server stopped. Reload the page for a new session.</div>
<div id="terminal" class="textual-terminal" data-session-websocket-url="{u}" data-font-size="{font_size}"></div>
</body></html>
"""


def _say(message: str) -> None:
    print(f"tuiprof serve: {message}", file=sys.stderr, flush=True)


class AppSession(AppService):
    """One browser page's app process: ``tuiprof`` run under Textual's web driver, in a
    process group of its own (Ctrl-C on the server's terminal does not reach it; the server
    ends it and whatever it started). It may start before its page connects (the server's
    prestarted spare): its output is then kept until :meth:`attach`."""

    def __init__(self, argv: list[str]) -> None:
        async def nowhere(_: object = None) -> None:  # the web driver's file and URL messages are dropped
            return None

        super().__init__(" ".join(argv), write_bytes=nowhere, write_str=nowhere, close=nowhere, download_manager=DownloadManager())
        self.number = 0  # set when a page takes it
        self.argv = argv
        self.pid: int | None = None
        self.app_quit = False  # the app said it exited (q)
        self.websocket: web.WebSocketResponse | None = None
        self.pending: list[bytes] = []  # output before a page took it
        self.painted = asyncio.Event()
        self.size = (SPARE_COLUMNS, SPARE_ROWS)  # the page's terminal size, once a page has it
        self._resizer: asyncio.Task[None] | None = None

    @property
    def usable(self) -> bool:
        """Started, still running, and not yet given to a page."""
        return self._process is not None and self._process.returncode is None and not self.app_quit and self.websocket is None

    async def attach(self, websocket: web.WebSocketResponse, size: tuple[int, int] | None = None) -> None:
        """Give the app to a page: its output so far first, then live; ``size``: the page's
        terminal size for an app started before the page (see :meth:`_resize_when_painted`)."""
        while self.pending:
            chunk = b"".join(self.pending)
            self.pending.clear()
            await websocket.send_bytes(chunk)
        self.websocket = websocket  # no await between the empty check and this: no packet overtakes another
        if self.app_quit:
            await websocket.close()
        elif size is not None:
            self.size = size
            self._resizer = asyncio.create_task(self._resize_when_painted())

    async def _resize_when_painted(self) -> None:
        """Send the page's size once the app has painted, and again shortly after.

        Textual's web driver posts its start-up size (the spare's) from the event loop as it
        starts reading input; a resize already waiting in its input can be posted before
        that one and then be overridden. After the first paint the start-up size has been
        handled; the second send covers an app whose loop was slow to get there. The size
        sent is the page's latest (a resize from the page updates it)."""
        assert self._task is not None
        painted = asyncio.ensure_future(self.painted.wait())
        await asyncio.wait([painted, self._task], return_when=asyncio.FIRST_COMPLETED)
        painted.cancel()
        for delay in (0.0, 0.5):
            await asyncio.sleep(delay)
            if self._task.done():
                return
            await self.set_terminal_size(*self.size)

    async def on_data(self, payload: bytes) -> None:
        if len(payload) > 64:  # a screen paint, not one of the start-up mode switches
            self.painted.set()
        if self.websocket is None:
            self.pending.append(payload)
        else:
            await self.websocket.send_bytes(payload)

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        env = super()._build_environment(width, height)
        env["TERM"] = "xterm-256color"  # xterm.js: the app draws in full colour, not ANSI-only
        env["COLORTERM"] = "truecolor"
        package_parent = str(Path(__file__).resolve().parents[1])  # a source checkout runs as it is
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
        return env

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        # an argument list, not a shell command line: a run path is never parsed by a shell
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,
        )
        self._stdin = process.stdin
        self.pid = process.pid
        return process

    async def run(self) -> None:
        """Relay the app's output packets to the page until the app's stdout closes; its
        stderr goes to the server's terminal line by line through ``safe_text``."""
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        stdout, stderr = process.stdout, process.stderr

        async def relay_stderr() -> None:
            async for line in stderr:
                text = line.decode("utf-8", "replace").rstrip("\n")
                if text.strip():
                    _say(f"session {self.number}: {safe_text(text)}")

        stderr_task = asyncio.create_task(relay_stderr())
        try:
            for _ in range(10):  # the web driver's first line says a Textual app is talking
                line = await stdout.readline()
                if not line or line == b"__GANGLION__\n":
                    break
            while True:
                kind = await stdout.readexactly(1)
                size = int.from_bytes(await stdout.readexactly(4), "big")
                payload = await stdout.readexactly(size)
                if kind == b"D":
                    await self.on_data(payload)
                elif kind == b"M":
                    await self.on_meta(payload)
                # b"P" (file downloads) is not offered: tuiprof writes its exports on the server
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(stderr_task, 1.0)

    async def on_meta(self, data: bytes) -> None:
        """Only the app's exit is acted on; it cannot make the page open a URL."""
        with contextlib.suppress(ValueError, TypeError):
            if json.loads(data).get("type") == "exit":
                self.app_quit = True
                if self.websocket is not None:
                    await self.websocket.close()

    async def end(self, grace_s: float) -> None:
        """Ask the app to quit; after ``grace_s`` end its whole process group (SIGTERM, then
        SIGKILL), and wait for the relay to finish."""
        process = self._process
        if process is None:
            return
        if self._resizer is not None:
            self._resizer.cancel()
        if process.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.send_meta({"type": "quit"}), 0.2)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), grace_s)
        for sig, wait_s in ((signal.SIGTERM, 0.3), (signal.SIGKILL, 2.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)  # also what the app started (loader workers)
            if process.returncode is None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(process.wait(), wait_s)
        if self._task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._task, 1.0)
            self._task = None


class ServeServer:
    """The web server: the token/cookie gate, the page, the static files, the sessions."""

    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.cookie_secret = secrets.token_urlsafe(32)
        self.cookie_name = f"tuiprof_serve_{options.port}"
        self.sessions: dict[int, AppSession] = {}
        self.websockets: set[web.WebSocketResponse] = set()
        self.reserved = 0
        self.started = 0
        self.spare: AppSession | None = None
        self.spare_task: asyncio.Task[None] | None = None
        self.stopping = False
        self.js = textual_js()

    # -- the gate --------------------------------------------------------------
    def _allowed(self, request: web.Request) -> bool:
        cookie = request.cookies.get(self.cookie_name, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), self.cookie_secret.encode())

    @web.middleware
    async def gate(self, request: web.Request, handler):
        host = request.headers.get("Host", "")
        if not HOST_HEADER.match(host) or (not self.options.allow_remote and not is_loopback(_host_name(host))):
            return self._forbidden("403: unexpected Host header")
        if self._allowed(request):
            response = await handler(request)
        else:
            token = request.query.get("token", "")
            if request.path != "/" or not token or not hmac.compare_digest(token.encode(), self.options.token.encode()):
                return self._forbidden("403: open the URL that tuiprof serve printed (it carries the token)")
            rest = [(k, v) for k, v in request.query.items() if k != "token"]
            response = web.Response(status=303, headers={"Location": str(URL.build(path="/", query=rest))})  # the token leaves the address bar
            response.set_cookie(self.cookie_name, self.cookie_secret, httponly=True, samesite="Strict", path="/")
        if not isinstance(response, web.WebSocketResponse):
            response.headers["Content-Security-Policy"] = CSP.format(host=host)
            response.headers["X-Frame-Options"] = "DENY"
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    @staticmethod
    def _forbidden(text: str) -> web.Response:
        return web.Response(status=403, text=text + "\n", headers={"Cache-Control": "no-store"})

    # -- pages -----------------------------------------------------------------
    async def index(self, request: web.Request) -> web.Response:
        if self._full():
            return web.Response(status=503, text=f"503: {self.options.max_sessions} sessions are open (--max-sessions); close one and reload\n")
        try:
            font_size = min(max(int(request.query.get("fontsize", "16")), 6), 48)
        except ValueError:
            font_size = 16
        ws_url = f"{'wss' if request.secure else 'ws'}://{request.host}/ws"
        return web.Response(text=page_html(self.options.title, ws_url, font_size), content_type="text/html")

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name == "page.css":
            return web.Response(text=PAGE_CSS, content_type="text/css")
        if name not in STATIC_FILES:
            raise web.HTTPNotFound()
        body = self.js if name == "js/textual.js" else (STATIC / name).read_bytes()
        return web.Response(body=body, content_type=STATIC_FILES[name], headers={"Cache-Control": "private, max-age=3600"})

    # -- sessions --------------------------------------------------------------
    def _full(self) -> bool:
        return len(self.sessions) + self.reserved >= self.options.max_sessions

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin is not None and origin not in (f"http://{request.host}", f"https://{request.host}"):
            return self._forbidden("403: websocket from another site")
        if self.stopping or self._full():
            return web.Response(status=503, text=f"503: {self.options.max_sessions} sessions are open (--max-sessions)\n")
        self.reserved += 1
        try:
            websocket = web.WebSocketResponse(heartbeat=15)
            await websocket.prepare(request)
            size = (_int_query(request, "width", 80), _int_query(request, "height", 24))
            session, prestarted = await self._take_app(*size)
            if session is not None:
                self.started += 1
                session.number = self.started
                self.sessions[session.number] = session
                self.websockets.add(websocket)
        finally:
            self.reserved -= 1
        self.refill()
        if session is None:
            await websocket.close()
            return websocket
        _say(f"session {session.number} started (pid {session.pid}, from {safe_text(request.remote)}; {len(self.sessions)} open)")
        reason = "page closed"
        try:
            await session.attach(websocket, size if prestarted else None)
            reason = await self._relay_input(websocket, session)
        finally:
            await session.end(STOP_GRACE_S if self.stopping else QUIT_GRACE_S)
            with contextlib.suppress(Exception):
                await websocket.close()
            self.sessions.pop(session.number, None)
            self.websockets.discard(websocket)
            _say(f"session {session.number} ended ({'server stopped' if self.stopping else reason}; {len(self.sessions)} open)")
            self.refill()
        return websocket

    async def _take_app(self, width: int, height: int) -> tuple[AppSession | None, bool]:
        """The prestarted app (True: resize it to the page), or a new one of the page's size.
        A spare still starting is waited for: it is further along than a new app would be, and
        starting another beside it would leave one app more than ``--max-sessions``."""
        if self.spare is None and self.spare_task is not None and not self.spare_task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self.spare_task)
        spare, self.spare = self.spare, None
        if spare is not None and spare.usable and width >= SPARE_COLUMNS and height >= SPARE_ROWS:
            return spare, True
        if spare is not None:
            await spare.end(0.0)
        return await self._start_app(width, height), False

    async def _start_app(self, width: int, height: int) -> AppSession | None:
        session = AppSession(self.options.argv)
        try:
            await session.start(width, height)
        except OSError as err:
            _say(f"an app could not start: {safe_text(err)}")
            return None
        return session

    def refill(self) -> None:
        """Start the next spare app when none is up and another session would be allowed."""
        if not self.options.prestart or self.stopping or self.spare is not None or (self.spare_task and not self.spare_task.done()):
            return
        if len(self.sessions) >= self.options.max_sessions:
            return

        async def start() -> None:
            spare = await self._start_app(SPARE_COLUMNS, SPARE_ROWS)
            if spare is not None and (self.stopping or self.spare is not None):
                await spare.end(0.0)
            else:
                self.spare = spare

        self.spare_task = asyncio.create_task(start())

    async def _relay_input(self, websocket: web.WebSocketResponse, session: AppSession) -> str:
        """Keys, resizes and focus from the page to the app until the page closes or sits
        idle for ``idle_timeout_s``; returns why it ended."""
        idle = self.options.idle_timeout_s
        while True:
            try:
                message = await websocket.receive(timeout=idle if idle > 0 else None)
            except asyncio.TimeoutError:
                return f"idle {idle:g} s"
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                return "app quit" if session.app_quit else "page closed"
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
                kind, data = envelope[0], (envelope[1] if len(envelope) > 1 else None)
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            if kind == "stdin" and isinstance(data, str):
                await session.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                session.size = (_clamp(data.get("width"), 80), _clamp(data.get("height"), 24))
                await session.set_terminal_size(*session.size)
            elif kind == "ping":
                await websocket.send_json(["pong", str(data)[:32]])
            elif kind == "blur":
                await session.blur()
            elif kind == "focus":
                await session.focus()

    async def stop_all(self) -> None:
        """End every session and the spare at once (Ctrl-C)."""
        self.stopping = True
        if self.spare_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.spare_task), 0.5)
        apps = [*self.sessions.values(), *([self.spare] if self.spare else [])]
        await asyncio.gather(*(app.end(STOP_GRACE_S) for app in apps), return_exceptions=True)
        await asyncio.gather(*(ws.close() for ws in list(self.websockets)), return_exceptions=True)

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self.gate])
        app.add_routes([web.get("/", self.index), web.get("/ws", self.websocket), web.get("/static/{name:.+}", self.static)])
        return app


def _host_name(header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8765`` -> ``[::1]``)."""
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.split(":", 1)[0]


def _int_query(request: web.Request, name: str, default: int) -> int:
    try:
        return _clamp(int(request.query.get(name, default)), default)
    except ValueError:
        return default


def _clamp(value: object, default: int) -> int:
    """A terminal dimension from the page: an int in 1..1000, else ``default``."""
    return value if isinstance(value, int) and 0 < value <= 1000 else default


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (OSError when it is taken or not ours to take)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart reuses a port in TIME_WAIT, never a listening one
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def _serve(options: ServeOptions, sock: socket.socket) -> None:
    server = ServeServer(options)
    runner = web.AppRunner(server.application(), handle_signals=False, access_log=None, shutdown_timeout=0.2)
    await runner.setup()
    site = web.SockSite(runner, sock, shutdown_timeout=0.2)
    await site.start()
    server.refill()
    port = sock.getsockname()[1]
    url = f"http://{url_host(options.host)}:{port}/?token={options.token}"
    print(f"Serving {safe_text(options.title)} at {url}", flush=True)
    target = "127.0.0.1" if is_loopback(options.host) or options.host in ("0.0.0.0", "::") else url_host(options.host)
    print(
        f"From a laptop: ssh -L {port}:{target}:{port} {safe_text(socket.gethostname())}   then open http://127.0.0.1:{port}/?token={options.token} there",
        flush=True,
    )
    idle = f"idle ones end after {options.idle_timeout_s:g} s" if options.idle_timeout_s > 0 else "no idle timeout"
    print(f"Each browser page is its own app (at most {options.max_sessions}; {idle}). Ctrl-C stops the server.", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        began = time.monotonic()
        await server.stop_all()
        await runner.cleanup()
        _say(f"stopped ({server.started} sessions served; the last ones ended in {time.monotonic() - began:.2f} s)")


def serve(options: ServeOptions) -> int:
    """Bind, print the URL, serve until Ctrl-C/SIGTERM; the exit status."""
    from tui_prof.exits import EXIT_OK, EXIT_USAGE

    if not is_loopback(options.host):
        if not options.allow_remote:
            _say(f"--host {safe_text(options.host)} is not a loopback address; add --allow-remote to serve beyond this machine (or use the ssh -L tunnel)")
            return EXIT_USAGE
        _say(
            f"WARNING: serving on {safe_text(options.host)}: anyone who can reach this port and learns the URL's token gets the app, over plain HTTP (the token is not encrypted)"
        )
    try:
        sock = bind(options.host, options.port)
    except OSError as err:
        what = "is already in use" if err.errno == errno.EADDRINUSE else f"cannot be used ({safe_text(err.strerror or err)})"
        _say(f"port {options.port} on {safe_text(options.host)} {what}; choose another with --port (0 = any free port)")
        return EXIT_USAGE
    options.port = sock.getsockname()[1]
    asyncio.run(_serve(options, sock))
    return EXIT_OK
