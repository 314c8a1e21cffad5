is_true() {  # a boolean variable, however the agent spells it
    case "$1" in true | True | TRUE | 1 | yes) return 0 ;; *) return 1 ;; esac
}
