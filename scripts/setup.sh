# Shared set-up for scripts/demo and scripts/test (sourced, not run).
# Installs what a fresh Debian machine lacks, into .venv, without touching the system Python.

is_debian_root() { [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; }

# Install Debian packages when a command is missing: as root on Debian, else say which tests skip.
# $1: what the commands are for (the tests that skip without them); $2: the commands, space-separated;
# the rest: the packages that bring them.
install_missing() {
    local purpose=$1 commands=$2 command missing=""
    shift 2
    for command in $commands; do
        command -v "$command" >/dev/null || missing="$missing $command"
    done
    [ -z "$missing" ] && return
    if ! is_debian_root; then
        echo "setup:$missing missing and this is not root on Debian: $purpose will be skipped (install $*)" >&2
        return
    fi
    echo "setup: installing $* ($purpose)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Intel's offline tools (iga64, ocloc, GenX_IR): the oracles the test suite checks our bytes against.
setup_intel_tools() {
    install_missing "tests that need Intel's tools" "iga64 ocloc" libigc-tools intel-opencl-icd
    link_iga_library
}

# Intel's OpenCL runtime (NEO) and the ICD loader: xegen.runtime launches zebins through them, and
# the tests run NEO without a GPU to check that it accepts xegen's kernels.
setup_opencl_runtime() {
    if [ -e /etc/OpenCL/vendors/intel.icd ] && ldconfig -p 2>/dev/null | grep -q 'libOpenCL\.so\.1 '; then
        return
    fi
    if ! is_debian_root; then
        echo "setup: Intel's OpenCL runtime is missing and this is not root on Debian: the runtime tests will be" \
             "skipped (install ocl-icd-libopencl1 intel-opencl-icd)" >&2
        return
    fi
    echo "setup: installing ocl-icd-libopencl1 intel-opencl-icd (the runtime tests)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ocl-icd-libopencl1 intel-opencl-icd >/dev/null
}

# Headless Chromium: the network report's test opens the page in it.
setup_browser() {
    install_missing "the network report's browser test" chromium chromium
}

# `ocloc disasm` loads libiga64.so, which Debian ships only as libiga64.so.1: link it (also when
# the tools were installed before, by hand or by an earlier run that could not link it).
# $1: the library directory (default: Debian's).
link_iga_library() {
    local lib=${1:-/usr/lib/x86_64-linux-gnu}
    if [ -e "$lib/libiga64.so.1" ] && [ ! -e "$lib/libiga64.so" ]; then
        if [ -w "$lib" ]; then
            ln -sf "$lib/libiga64.so.1" "$lib/libiga64.so"
        else
            echo "setup: $lib/libiga64.so is missing (ocloc disasm needs it); as root:" \
                 "ln -s libiga64.so.1 $lib/libiga64.so" >&2
        fi
    fi
}

# A virtual environment in .venv with xegen installed in editable mode.
# $1: the pip extras to install ("" or "test").
setup_venv() {
    local extras=${1:-}
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
        if is_debian_root; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip >/dev/null
        else
            echo "setup: python3 has no venv module; install python3-venv" >&2
            exit 1
        fi
    fi
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    local spec="."
    [ -n "$extras" ] && spec=".[$extras]"
    # (the filter drops pip notes about local package mirrors this machine may not have)
    .venv/bin/python -m pip install -q --disable-pip-version-check -e "$spec" 2> >(grep -v "^WARNING: Location" >&2)
}
