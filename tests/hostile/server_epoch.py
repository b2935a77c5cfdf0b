"""How the hostile tests see that the server restarted.

A backend that crashes makes the postmaster end every other session and reinitialize, without
itself restarting: `pg_postmaster_start_time()` stays the same (issue 63 checked it: three
segfaults, one start time). The checkpointer, though, is started again, so its `backend_start`
changes, and that is the mark read here. Needs a superuser's connection (or pg_read_all_stats).
"""


def server_epoch(cur):
    """The postmaster's start time and the checkpointer's: either changes with a restart."""
    cur.execute(
        """SELECT pg_postmaster_start_time(),
                  (SELECT backend_start FROM pg_stat_activity WHERE backend_type = 'checkpointer')"""
    )
    return tuple(cur.fetchone())
