#!/usr/bin/env python3
"""Records real programs on an 80x24 pseudo-terminal as raw output byte streams.

Each recording is the program's output, byte for byte, while a fixed script of keystrokes
is typed at it, until it is killed (still running, so its last screen is its own); `NAME.bin` is what the replay test in phux-term feeds to the model, and
`NAME.screen` (written by that test with PHUX_BLESS=1) is the screen it must show.

Run from this directory: `python3 record.py [NAME...]`. Re-recording changes the fixtures
(clocks, paths, versions): bless the screens again and check them against tmux, as the replay
test's doc says.
"""

import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

COLS, ROWS = 80, 24

LESS_TEXT = "".join(f"line {i:03}: the quick brown fox jumps over the lazy dog\n" for i in range(200))

CURSES_BOXES = r"""
import curses
def main(s):
    curses.curs_set(0)
    s.border()
    s.addstr(0, 3, " phux boxes ")
    s.refresh()
    w = curses.newwin(8, 30, 4, 6)
    w.box()
    w.addstr(1, 2, "inside a box", curses.A_BOLD)
    w.addstr(2, 2, "reverse", curses.A_REVERSE)
    w.hline(3, 1, curses.ACS_HLINE, 28)
    w.refresh()
    v = curses.newwin(10, 20, 8, 50)
    v.box()
    v.addstr(1, 1, "second window")
    v.refresh()
    s.getch()
curses.wrapper(main)
"""

# name: (argv, [(delay seconds, bytes typed)], seconds to wait after the last key)
SCRIPTS = {
    "bash": (
        ["bash", "--norc", "--noprofile", "-i"],
        [(0.5, b"PS1='$ '\r"), (0.3, b"printf 'one\\ttwo\\n'; seq 1 30\r"),
         (0.5, b"echo done\r")],
        0.5,
    ),
    "vim": (
        ["vim", "-u", "NONE", "-N", "-i", "NONE", "vim.txt"],
        [(1.0, b"ihello from vim\x1b"), (0.3, b"yy20p"), (0.3, b":split\r"),
         (0.3, b":vsplit\r"), (0.3, b"\x17j")],
        0.5,
    ),
    "less": (
        ["less", "less.txt"],
        [(0.8, b" "), (0.3, b" "), (0.3, b"/fox 150\r")],
        0.5,
    ),
    "man": (
        ["man", "ls"],
        [(1.5, b" ")],
        0.5,
    ),
    "curses_boxes": (
        ["python3", "-c", CURSES_BOXES],
        [],
        1.5,
    ),
    "top": (
        ["top", "-d", "0.5"],
        [],
        1.5,
    ),
}


def record(name):
    argv, keys, tail = SCRIPTS[name]
    with open("less.txt", "w") as f:
        f.write(LESS_TEXT)
    env = dict(os.environ, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8",
               COLUMNS=str(COLS), LINES=str(ROWS), MANPAGER="less", PAGER="less")
    env.pop("LESS", None)
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    out = bytearray()

    def drain(seconds):
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return True
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    return False
                if not data:
                    return False
                out.extend(data)

    for delay, typed in keys:
        if not drain(delay):
            break
        os.write(fd, typed)
    drain(tail)
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    for scratch in ("less.txt", "vim.txt"):
        if os.path.exists(scratch):
            os.remove(scratch)
    with open(f"{name}.bin", "wb") as f:
        f.write(out)
    print(f"{name}: {len(out)} bytes")


if __name__ == "__main__":
    for name in sys.argv[1:] or SCRIPTS:
        record(name)
