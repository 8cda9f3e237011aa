# Sourced by scripts/device.sh and scripts/device-mpi.sh on the GPU machine:
# unpacks cJSON from .carry/debs into $PREFIX and points pkg-config, CMake,
# the compiler and the loader at it. Needs PREFIX and a log function.
rm -rf "$PREFIX"
mkdir -p "$PREFIX"
for deb in .carry/debs/*.deb; do
  [ -f "$deb" ] && dpkg -x "$deb" "$PREFIX"
done
PCDIR=$PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig
if [ -f "$PCDIR/libcjson.pc" ]; then
  sed -i "s|=/usr|=$PREFIX/usr|g" "$PCDIR"/*.pc
  export PKG_CONFIG_PATH=$PCDIR${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export CMAKE_PREFIX_PATH=$PREFIX/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LD_LIBRARY_PATH=$PREFIX/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CPATH=$PREFIX/usr/include${CPATH:+:$CPATH}
  log "cJSON from .carry/debs in $PREFIX"
else
  log "no .carry/debs (run scripts/device-prepare.sh first): relying on a system cJSON"
fi
