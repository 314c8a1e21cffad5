setprop() {  # file key value: key=value in a .properties file, replaced or added
    touch "$1"
    grep -v "^$2=" "$1" > "$1.new" || true
    printf '%s=%s\n' "$2" "$(oneline "$3")" >> "$1.new"
    mv "$1.new" "$1"
}
