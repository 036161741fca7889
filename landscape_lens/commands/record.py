"""``record --preset NAME | --clip CLIP.json | --run RUN_DIR --out FILE``: render a clip to MP4,
GIF or PNGs: a preset's story, a saved clip, or a recorded run's PCA path as it grew."""

from __future__ import annotations

from ..arguments import MAX_FPS, MAX_FRAMES, UsageError, int_in, seconds, size

NAME = "record"
HELP = "render a clip of a preset's run, or of a recorded training run, to MP4, GIF or PNGs"


def add_arguments(parser) -> None:
    parser.add_argument("--preset", help="without --clip: render this preset's story clip")
    parser.add_argument("--clip", help="a clip JSON file (layout, key frames, timing)")
    parser.add_argument(
        "--run", metavar="RUN_DIR", help="a training run folder (ll.Recorder's): film its PCA path as it grew"
    )
    parser.add_argument("--out", required=True, help="FILE.mp4, FILE.gif or a folder for PNGs")
    parser.add_argument("--size", type=size, default=(1920, 1080), help="story (or run) clip size")
    parser.add_argument("--fps", type=int_in(1, MAX_FPS), default=30, help="story clip frame rate")
    parser.add_argument("--seconds", type=seconds, default=8.0, help="story clip length")
    parser.add_argument("--orbit", action="store_true", help="story clip: turn the camera 360°")
    parser.add_argument("--steps", type=int_in(1, 10**7), default=None, help="override training steps")
    parser.add_argument("--theme", choices=("light", "dark"), default=None, help="--run: colour theme")


def run(args) -> int:
    if args.fps * args.seconds > MAX_FRAMES:
        raise UsageError(
            f"--fps {args.fps} × --seconds {args.seconds:g} is {args.fps * args.seconds:.0f} "
            f"frames; the limit is {MAX_FRAMES}"
        )
    from ..progress_bar import progress_bar

    if args.run is not None:
        given = [f"--{name}" for name in ("preset", "clip", "steps") if getattr(args, name) is not None]
        if args.orbit:
            given.append("--orbit")
        if given:
            raise UsageError(f"record --run films a recorded run; it takes no {', '.join(given)}")
        from gui.headless import record_run

        return record_run(args.run, args.out, args.size, args.fps, args.seconds, args.theme, progress_bar)
    if args.theme is not None:
        raise UsageError("--theme is for record --run; a clip films in the window's theme")
    from gui.headless import record_preset

    return record_preset(
        args.preset, args.out, args.size, args.fps, args.seconds, args.orbit, args.clip, args.steps, progress_bar
    )
