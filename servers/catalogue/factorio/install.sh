#!/bin/sh
# Factorio: the headless server from factorio.com ("stable", "latest" or a version such as 2.0.28).
set -eu
version={{VERSION}}
echo "Downloading the Factorio headless server ($version)."
curl -fsSL -o factorio-headless.tar.xz "https://factorio.com/get-download/$version/headless/linux64"
tar -xJf factorio-headless.tar.xz --strip-components=1
rm -f factorio-headless.tar.xz
chmod +x bin/x64/factorio
mkdir -p saves
