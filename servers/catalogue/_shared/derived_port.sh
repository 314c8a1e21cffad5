derived_port() {  # name allocation wanted: say so when a port the game opens itself is not its own
    if [ "$2" != "$3" ]; then
        echo "The game opens its $1 port on $3 itself, but this server's $1 allocation is $2:" \
            "that port is not forwarded and may be another server's." >&2
    fi
}
