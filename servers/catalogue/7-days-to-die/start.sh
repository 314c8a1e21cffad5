export HOME="$PWD" LD_LIBRARY_PATH="$PWD:${LD_LIBRARY_PATH:-}"
port={{SERVER_PORT}}
# The game on port (TCP and UDP) to port+2 (UDP); the console's telnet on TCP port+1, loopback
# only (no password). 7 Days to Die reads no commands from standard input, and a signal may
# cost it the world's last changes: the graceful stop is "shutdown" on the telnet console.
# The agent sends the stop signal (SIGUSR1) to the whole process group: the server ignores it,
# this shell, which stays, turns it into that "shutdown" (or SIGTERM when nc is missing).
telnet_port=$((port + 1))
pid=
shutdown() {
    pid=${pid:-$!}
    if [ -z "$pid" ]; then
        exit 143  # stopped before the server was started
    fi
    if ! { command -v nc > /dev/null 2>&1 \
        && printf 'shutdown\n' | nc -w 5 127.0.0.1 "$telnet_port" > /dev/null 2>&1; }; then
        kill -TERM "$pid" 2> /dev/null
    fi
}
trap shutdown USR1 INT TERM
(
    trap '' USR1
    exec ./7DaysToDieServer.x86_64 -quit -batchmode -nographics -dedicated \
        -configfile=serverconfig.xml -logfile /dev/stdout -ServerPort="$port" \
        -ServerName={{SERVER_NAME}} -ServerPassword={{SERVER_PASSWORD}} \
        -ServerMaxPlayerCount={{MAX_PLAYERS}} -GameDifficulty={{DIFFICULTY}} \
        -TelnetEnabled=true -TelnetPort="$telnet_port" -TelnetPassword=
) &
pid=$!
status=0
while kill -0 "$pid" 2> /dev/null; do
    wait "$pid"
    status=$?
done
exit "$status"
