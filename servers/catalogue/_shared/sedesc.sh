sedesc() {  # $1 safe as the replacement of a sed s|||
    oneline "$1" | sed -e 's/[\\&|]/\\&/g'
}
