"""``python -m agent``: run the node agent until SIGTERM or SIGINT (see agent/README.md)."""

import asyncio
import logging
import signal
import ssl
import sys

from aiohttp import web

from agent.app import make_app
from agent.config import Config, ConfigError, load_config
from agent.limits import LimitsUnavailable
from agent.node import Node

log = logging.getLogger("agent")


async def serve(config: Config) -> None:
    node = Node(config)
    await node.open()
    runner = web.AppRunner(make_app(node), access_log=None)
    await runner.setup()
    ssl_context = None
    if config.tls_cert and config.tls_key:
        ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ssl_context.load_cert_chain(config.tls_cert, config.tls_key)
    site = web.TCPSite(runner, config.listen_host, config.listen_port, ssl_context=ssl_context)
    try:
        await site.start()
        scheme = "https" if ssl_context else "http"
        log.info("listening on %s://%s:%s", scheme, config.listen_host, config.listen_port)
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, stopping.set)
        await stopping.wait()
        log.info("shutting down; the servers' processes keep running")
    finally:
        await runner.cleanup()
        await node.close()


def main() -> None:
    try:
        config = load_config(sys.argv[1:])
    except ConfigError as error:
        print(f"hms-agent: {error}", file=sys.stderr)
        sys.exit(2)
    logging.basicConfig(
        level=config.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        asyncio.run(serve(config))
    except (ConfigError, LimitsUnavailable) as error:
        print(f"hms-agent: {error}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
