# A Windows-only server: it runs under Wine, in the prefix the install made.
export HOME="$PWD" WINEPREFIX="$PWD/.wine" WINEARCH=win64 WINEDEBUG=-all
