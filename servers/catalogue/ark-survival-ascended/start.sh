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
# Names and passwords go to GameUserSettings.ini: on the command line, ARK's option
# string (Map?key=value?…) cannot hold spaces or question marks.
iniset ShooterGame/Saved/Config/WindowsServer/GameUserSettings.ini SessionSettings SessionName {{SERVER_NAME}}
iniset ShooterGame/Saved/Config/WindowsServer/GameUserSettings.ini ServerSettings ServerPassword {{SERVER_PASSWORD}}
iniset ShooterGame/Saved/Config/WindowsServer/GameUserSettings.ini ServerSettings ServerAdminPassword {{ADMIN_PASSWORD}}
map={{MAP}}
port={{SERVER_PORT}}
players={{MAX_PLAYERS}}
url="$map?listen?Port=$port?MaxPlayers=$players"
# The game logs to ShooterGame/Saved/Logs/ShooterGame.log only: follow it for the console and the ready line.
mkdir -p ShooterGame/Saved/Logs
: > ShooterGame/Saved/Logs/ShooterGame.log
tail -n +1 -F ShooterGame/Saved/Logs/ShooterGame.log 2>/dev/null &
follower=$!
(
    while [ -r /proc/$$/stat ] \
        && [ "$(sed 's/.*) //' /proc/$$/stat | cut -d ' ' -f 1)" != Z ]; do
        sleep 1
    done
    kill "$follower"
) > /dev/null 2>&1 &
# BattlEye does not run under Wine. ASA needs no separate query port.
exec wine ./ShooterGame/Binaries/Win64/ArkAscendedServer.exe "$url" \
    -WinLiveMaxPlayers="$players" -MultiHome={{SERVER_IP}} -NoBattlEye -servergamelog
