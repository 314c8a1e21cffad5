# The Wine prefix the server runs in, inside the server's directory.
export WINEPREFIX="$server_dir/.wine" WINEARCH=win64 WINEDEBUG=-all
wineboot --init
wineserver -w
