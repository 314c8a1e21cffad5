# A Windows-only server: it runs under Wine, in the prefix the install made.
export HOME="$PWD" WINEPREFIX="$PWD/.wine" WINEARCH=win64 WINEDEBUG=-all
oneline() {  # $1 on one line: settings files take a value a line
    printf '%s' "$1" | tr '\r\n' '  '
}
iniset() {  # file section key value: key=value in [section] of an INI file
    mkdir -p "$(dirname "$1")"
    touch "$1"
    INI_SECTION="[$2]" INI_KEY="$3" INI_VALUE="$(oneline "$4")" awk '
        function put() { print ENVIRON["INI_KEY"] "=" ENVIRON["INI_VALUE"]; done = 1 }
        function flush() { printf "%s", blanks; blanks = "" }
        {
            line = $0
            sub(/\r$/, "", line)
            if (line ~ /^[ \t]*$/) {
                blanks = blanks $0 "\n"
                next
            }
            if (line ~ /^\[.*\]$/) {
                if (inside && !done) put()
                inside = (line == ENVIRON["INI_SECTION"])
            } else if (inside && index(line, ENVIRON["INI_KEY"] "=") == 1) {
                flush()
                if (!done) put()
                next
            }
            flush()
            print
        }
        END {
            if (inside && !done) put()
            flush()
            if (!done) {
                if (NR > 0) print ""
                print ENVIRON["INI_SECTION"]
                put()
            }
        }
    ' "$1" > "$1.new"
    mv "$1.new" "$1"
}
config=ConanSandbox/Saved/Config/WindowsServer
iniset "$config/Engine.ini" OnlineSubsystem ServerName {{SERVER_NAME}}
iniset "$config/Engine.ini" OnlineSubsystem ServerPassword {{SERVER_PASSWORD}}
iniset "$config/Game.ini" /Script/Engine.GameSession MaxPlayers {{MAX_PLAYERS}}
port={{SERVER_PORT}}
# The game logs to ConanSandbox/Saved/Logs/ConanSandbox.log only: follow it for the console and the ready line.
mkdir -p ConanSandbox/Saved/Logs
: > ConanSandbox/Saved/Logs/ConanSandbox.log
tail -n +1 -F ConanSandbox/Saved/Logs/ConanSandbox.log 2>/dev/null &
follower=$!
(
    while [ -r /proc/$$/stat ] \
        && [ "$(sed 's/.*) //' /proc/$$/stat | cut -d ' ' -f 1)" != Z ]; do
        sleep 1
    done
    kill "$follower"
) > /dev/null 2>&1 &
# The game port and port+1 (raw UDP), Steam query on port+2.
exec wine ./ConanSandbox/Binaries/Win64/ConanSandboxServer-Win64-Shipping.exe -log \
    -MultiHome={{SERVER_IP}} -Port="$port" -QueryPort="$((port + 2))"
