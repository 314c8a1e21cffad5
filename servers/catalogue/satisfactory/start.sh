export HOME="$PWD"
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
iniset FactoryGame/Saved/Config/LinuxServer/Game.ini /Script/Engine.GameSession \
    MaxPlayers {{MAX_PLAYERS}}
port={{SERVER_PORT}}
# The game and its HTTPS API on port (UDP and TCP), reliable messaging on TCP port+1. The
# server's name and admin password are set when it is claimed from the game.
exec ./Engine/Binaries/Linux/FactoryServer-Linux-Shipping FactoryGame -Port="$port" \
    -ReliablePort="$((port + 1))" -multihome={{SERVER_IP}} -log -unattended
