json() {  # $1 as a JSON string
    printf '"%s"' "$(oneline "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}
