"""A worker's side of the generations: check in for the next one, then train, wait as a spare, or sit out."""

import time

from ..errors import EXIT_PEER_FAILED
from . import decide
from .book import Book, Decision, Role
from .carried import carried
from .setup import user_stopped

# what a worker carries of the job's book into its next check-in: a node 0 that was lost and came back takes
# the book on from the nodes that kept it (the restart budget, the nodes left out), not afresh, and waits for
# the nodes that checked in for the generation it lost (``present``), no others
def node_loop(gens):
    """This worker's generations; its exit code."""
    return NodeSide(gens).loop()


class NodeSide:
    def __init__(self, gens):
        self.gens, self.settings, self.log, self.config = gens, gens.settings, gens.log, gens.config
        self.checkin, self.plan, self.identity = gens.checkin, gens.plan, gens.identity
        self.generation = 0       # the generation this node asks for next
        self.carried = None       # the book of the last generation it heard of (CARRIED)
        self.lost_silent = None   # this node's own silence node 0 declared it lost for (``LinkWatch.declared_lost``)

    # --- the other nodes -----------------------------------------------------------------------------
    def loop(self):
        from ..checkin.heartbeat import LinkWatch
        from ..checkin.session import say_verdict, record_verdict

        while True:
            started = time.monotonic()  # each check-in's own seconds, not the job's life (walk18b B13)
            verdict, channel = self._join()
            if self.generation == 0 or verdict["decision"] != "start":
                say_verdict(verdict, time.monotonic() - started, self.log)
                record_verdict(self.plan, self.gens.ident_settings, verdict, self.checkin.fingerprint)
            if verdict["decision"] != "start":
                channel.close()
                from ..checkin.session import refusal_error

                raise refusal_error(verdict)
            book = Book.from_json(verdict.get("recovery") or {})
            self.gens.keep(decide.kept_by(book, self.identity))
            self.carried = carried(book.to_json(public=True))
            if book.decision is Decision.STOP:
                from .hub import say_stop

                say_stop(book, self.log)
                channel.finish(1.0)
                return book.code
            self.generation = book.generation + 1
            role = book.role_of(self.identity)
            watch = LinkWatch(channel, self.log, recovery=True, hub_wait_s=self.settings.get("wait_timeout", 600))
            if role is Role.TRAINING:
                code = self.gens.launch(book, verdict, watch)
                self.lost_silent = watch.lost_for()  # the next check-in's failure says it
                if code == 0 or user_stopped(self.gens.received) or watch.job_was_ended():
                    self.gens.ending = watch.ended_by()
                    return code  # job_was_ended: node 0 was stopped on purpose, the job ends here too (B3)
                self._note_hub_lost(watch)
                self._say_silence(watch)
                continue
            self.gens._say_role(book, role)
            self.gens.hold_warm(role)
            job_over = watch.sit_out()  # a spare has no launcher to stop
            self.lost_silent = watch.lost_for()
            channel.finish(2.0)  # not close(): a reset with node 0's beats unread would lose this node's answer
            if watch.job_was_ended():  # node 0 was stopped on purpose: the job ends on every node (walk10 B3)
                self.gens.ending = watch.ended_by()
                return EXIT_PEER_FAILED
            if job_over:  # said, and kept, by ``Generations`` ("this node was not needed")
                return 0
            self._note_hub_lost(watch)

    def _say_silence(self, watch):
        """Woken from a silence node 0 declared it lost for, its ranks failing first: said before the wait to check
        in again, as when the news comes first (walk17b B7: nothing for the whole wait_timeout)."""
        pause = watch.silence_unsaid()
        if pause is not None:
            wait = self.settings.get("wait_timeout", 600)
            self.log(f"this node itself was silent for {pause:.0f}s (its process stopped: SIGSTOP, a suspended VM "
                     "or a long pause), longer than node 0 waits for a heartbeat, so node 0 has most likely "
                     f"declared it lost; checking in with node 0 again (up to {wait:g}s, wait_timeout): the job "
                     "may have gone on without this node, or ended")

    def _note_hub_lost(self, watch):
        """When node 0 itself was what ended the generation, the time this node heard it goes with the book it
        carries: node 0 come back dates its own loss from it, not from its return (walk17b B1)."""
        fault = watch.fault()
        if fault is not None and fault[0] and fault[1].startswith("node 0 "):
            self.carried = dict(self.carried, hub_lost_at=fault[0])

    def _join(self):
        """Check in for the next generation; node 0 gone after this node was declared lost for its own silence is
        said as that: the job most likely ended without it (walk15b B13: "node 0 is gone" alone blamed node 0)."""
        from ..errors import EXIT_UNREACHABLE, EntrypointError

        try:
            return self.checkin.join(self.generation, self.carried)
        except EntrypointError as err:
            if self.lost_silent is None or err.exit_code != EXIT_UNREACHABLE:
                raise
            raise EntrypointError(f"{err}; this node itself was silent for {self.lost_silent:.0f}s and node 0 "
                                  "declared it lost: the job most likely went on or ended without it (node 0's "
                                  "log says which)", EXIT_UNREACHABLE) from None
