"""A bot-like script for trying the agent: needs DISCORD_TOKEN, says it is ready, heartbeats.

    DISCORD_TOKEN=… python3 bot.py [--heartbeat 5]

It never prints the token, only its last four characters. SIGTERM ends it cleanly.
"""

import argparse
import os
import signal
import sys
import time


def say(text: str) -> None:
    print(text, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--heartbeat", type=float, default=5.0)
    args = parser.parse_args()
    token = os.environ.get("DISCORD_TOKEN", "")
    if not token:
        print("DISCORD_TOKEN is not set: cannot log in", file=sys.stderr, flush=True)
        sys.exit(1)

    def terminate(number, frame):
        say("Shutting down")
        sys.exit(0)

    signal.signal(signal.SIGTERM, terminate)
    say(f"Logged in as TestBot#0001 (token ****{token[-4:]})")
    say("Bot ready")
    beat = 0
    while True:
        time.sleep(args.heartbeat)
        beat += 1
        say(f"heartbeat {beat}")


if __name__ == "__main__":
    main()
