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
