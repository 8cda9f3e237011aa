#!/usr/bin/env bash
# The install tree and an out-of-tree plugin: `cmake --install --prefix P`,
# then the example built with the one compiler line of its README against
# P's pkg-config file, then loaded by P's frontier (--plugin and
# FRONTIER_PLUGIN_PATH). Also checks the installed header alone compiles as
# strict C99 and as C++.
#   install_one_line_build.sh BUILD_DIR EXAMPLE_DIR
set -euo pipefail
build=$1
example=$2
for tool in cc pkg-config cmake; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

prefix="$tmp/prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
pc=$(find "$prefix" -name frontier.pc)
[ -n "$pc" ] || { echo "FAIL: no frontier.pc installed" >&2; exit 1; }
[ -f "$prefix/include/frontier/plugin.h" ] || bad "plugin.h not installed"
[ -x "$prefix/bin/frontier" ] || bad "frontier not installed"
[ -d "$(dirname "$pc")/../frontier/plugins" ] || bad "plugin folder not installed"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")

mkdir "$tmp/out-of-tree"
cp "$example/ternary.c" "$tmp/out-of-tree/"
cd "$tmp/out-of-tree"
# the README's line, verbatim
cc -shared -fPIC $(pkg-config --cflags frontier) ternary.c -o libternary.so
nm -D --defined-only libternary.so | grep -q ' T frontier_plugin_entry$' || bad "entry symbol not exported"

FRONTIER_PLUGIN_PATH=none "$prefix/bin/frontier" quantizers --plugin ./libternary.so >list.txt 2>err.txt ||
  bad "installed frontier failed to load the plugin: $(cat err.txt)"
grep -q '^ternary 1.0.0 (./libternary.so) \[deterministic\]$' list.txt || bad "--plugin listing: $(cat list.txt)"
FRONTIER_PLUGIN_PATH="$PWD" "$prefix/bin/frontier" quantizers >list.txt 2>err.txt
grep -q "^ternary 1.0.0 ($PWD/libternary.so) \[deterministic\]$" list.txt || bad "FRONTIER_PLUGIN_PATH listing"
[ "$(grep -c '^  ternary-' list.txt)" = 3 ] || bad "three ternary configurations"

# the header is all a plugin needs, in C99 and C++ as well
printf '#include <frontier/plugin.h>\nint main(void) { return FRONTIER_PLUGIN_ABI_VERSION == 1 ? 0 : 1; }\n' >h.c
cc -std=c99 -pedantic -Wall -Wextra -Werror $(pkg-config --cflags frontier) -c h.c -o h.o || bad "plugin.h as C99"
if command -v c++ >/dev/null; then
  # a C++ plugin's entry point gets the unmangled name the loader looks up:
  # the header declares it extern "C"
  cp h.c h.cpp
  printf 'const frontier_quantizer *frontier_plugin_entry(const frontier_host_api *) { return 0; }\n' >>h.cpp
  c++ -std=c++11 -pedantic -Wall -Wextra -Werror $(pkg-config --cflags frontier) -c h.cpp -o h2.o ||
    bad "plugin.h as C++"
  if command -v nm >/dev/null && [ -f h2.o ]; then
    nm h2.o | grep -q ' T frontier_plugin_entry$' || bad "plugin.h in C++: frontier_plugin_entry is not extern \"C\""
  fi
fi

[ "$fail" = 0 ] && echo "install + one-line plugin build: all checks passed"
exit "$fail"
