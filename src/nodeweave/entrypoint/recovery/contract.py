"""Recovery's rows of the renderer -> entrypoint contract (``planning/contract.py`` appends them to SETTINGS).

Kept here, beside the code that reads them, and imported by ``planning/contract.py`` once its ``Setting`` and
readers exist: import ``planning.contract`` (never this module first) to get them.
"""

from ..planning.contract import Setting, optional_text, read_int, read_switch

RECOVERY_RESTARTS, RECOVERY_NO_PROGRESS = 5, 3  # recovery's brakes by default: docs/recovery.md


def on_text(value):
    """Only a switched-on option is written out: off is the default."""
    return "on" if value else None


def unless(default):
    """A spec value as the variable's text, None (variable left out) when it is ``default``."""
    return lambda value: None if value == default else str(value)


RECOVERY_ROWS = (
    Setting("recovery", "--recovery", "NODEWEAVE_RECOVERY", "on | off (default): a fault starts a new generation "
            "of the job instead of ending it (docs/recovery.md)", spec="recovery.enabled", read=read_switch,
            text=on_text),
    Setting("spares", "--spares", "NODEWEAVE_SPARES", "nodes beyond the node count that check in and wait to "
            "replace a left-out node (node ranks N..N+spares-1)", spec="recovery.spares", read=read_int(0),
            text=unless(0)),
    Setting("recovery_max_restarts", "--recovery-max-restarts", "NODEWEAVE_RECOVERY_MAX_RESTARTS",
            f"restarts of the whole job before exit 8 (default {RECOVERY_RESTARTS})",
            spec="recovery.max_restarts", read=read_int(1), text=unless(RECOVERY_RESTARTS)),
    Setting("no_progress_restarts", "--no-progress-restarts", "NODEWEAVE_NO_PROGRESS_RESTARTS",
            f"generations in a row without a newer checkpoint before exit 9; 0 = never (default "
            f"{RECOVERY_NO_PROGRESS})", spec="recovery.no_progress_restarts", read=read_int(0),
            text=unless(RECOVERY_NO_PROGRESS)),
    Setting("checkpoint_dir", "--checkpoint-dir", "NODEWEAVE_CHECKPOINT_DIR", "the folder the script saves "
            "checkpoints in; node 0 hands the newest complete one to the ranks as NODEWEAVE_RESUME_FROM",
            spec="recovery.checkpoint_dir", text=optional_text),
    Setting("straggler_is_fault", "--straggler-is-fault", "NODEWEAVE_STRAGGLER_IS_FAULT", "on | off (default): "
            "a lasting straggler counts as a fault for recovery", spec="recovery.straggler_is_fault",
            read=read_switch, text=on_text),
)
