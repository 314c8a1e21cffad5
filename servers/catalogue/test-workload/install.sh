#!/bin/sh
# The test workload: nothing to download (the agent ships gameserver.py); writes its settings.
set -eu
motd={{MOTD}}
delay={{READY_DELAY}}
motd=$(printf '%s' "$motd" | tr '\r\n' '  ')
printf '%s\n' '# Written by the install script of the test workload.' "motd=$motd" \
    "ready-delay=$delay" > server.properties
