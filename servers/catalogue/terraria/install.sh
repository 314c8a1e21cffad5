#!/bin/sh
# Terraria: Re-Logic's dedicated server zip (terraria.org), the newest or the chosen version.
set -eu
version={{VERSION}}
if [ -z "$version" ] || [ "$version" = latest ]; then
    # The names of the server zips, newest first: ["terraria-server-1449.zip", ...]
    file=$(curl -fsSL https://terraria.org/api/get/dedicated-servers-names \
        | tr -d '[] "\r\n' | tr ',' '\n' | head -n 1)
else
    file="terraria-server-$(printf '%s' "$version" | tr -d .).zip"
fi
case "$file" in
    terraria-server-*.zip) ;;
    *)
        echo "Could not find the Terraria server's download." >&2
        exit 1
        ;;
esac
number=${file#terraria-server-}
number=${number%.zip}
echo "Downloading $file"
curl -fsSL -o terraria-server.zip "https://terraria.org/api/download/pc-dedicated-server/$file"
rm -rf .terraria
unzip -q terraria-server.zip -d .terraria
cp -R ".terraria/$number/Linux/." .
rm -rf .terraria terraria-server.zip
chmod +x TerrariaServer.bin.x86_64
mkdir -p worlds
