"""Node base class whose callbacks never end the process: count, refuse, report.

rclpy's executors re-raise an exception of a callback out of ``spin_once``, so one
message the conversions did not anticipate (NaN where an integer is needed, a value
that overflows, an absurd size that raises ``MemoryError``) would end the node. Every
subscription, service and timer callback a :class:`GuardedNode` creates runs inside a
guard instead: an exception is caught, counted per callback, logged on one bounded
line (the first at once, then at most one summary every :data:`LOG_PERIOD_S`) and
reported on ``/diagnostics`` through :meth:`GuardedNode.guard_report` (level ERROR
while failures are recent, the counts always). Inputs a node refuses by its own checks
are counted with :meth:`GuardedNode.count_refusal` and reported the same way, at WARN
while recent. A service whose callback fails
answers its default response, with ``success: false`` and the error as ``message``
when the type has those fields (``std_srvs/Trigger``). ``KeyboardInterrupt`` and
``SystemExit`` pass through: they are not input errors.

The nodes still validate their inputs and refuse bad ones with their own counters
and messages; the guard is the root-level net for whatever slips through.
"""

from __future__ import annotations

import inspect
import math
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock
from rclpy.node import Node
from rclpy.service import Service
from rclpy.subscription import Subscription
from rclpy.timer import Timer

from dynamic_identification.core.errors import shorten
from dynamic_identification.nodes.conversions import time_message

LOG_PERIOD_S = 5.0
"""After the first failure of a callback, at most one log line per this many seconds (s)."""

RECENT_S = 10.0
"""A failure this recent (s) raises the node's diagnostics to ERROR."""

DIAGNOSTICS_PERIOD_S = 1.0
"""A node publishes its status on ``/diagnostics`` this often (s)."""


def status_message(level: int, name: str, message: str, values: Mapping[str, str]) -> DiagnosticStatus:
    """A ``DiagnosticStatus`` of ``values`` (key → text); :meth:`GuardedNode.guard_report` names it after the node."""
    return DiagnosticStatus(
        level=level,
        name=name,
        message=message,
        hardware_id="",
        values=[KeyValue(key=key, value=value) for key, value in values.items()],
    )


RECURRING_PERIOD_S = 30.0
"""A recurring warning is logged at once, then at most once per this many seconds with the count (s)."""


@dataclass
class RecurringWarning:
    """A warning that may recur for as long as a node runs (a late feedforward, a simulation behind the clock).

    :meth:`line` gives the line to log: the first occurrence at once, then at most one every ``period_s`` that
    says how often it occurred meanwhile (rclpy's ``throttle_duration_sec`` drops the repeats without a
    count: 52 lines in 9 minutes, and none told how often it happened).
    """

    period_s: float = RECURRING_PERIOD_S
    count: int = 0
    logged_count: int = 0
    logged_s: float = -math.inf

    def line(self, message: str, now_s: float) -> str | None:
        """Count one occurrence at monotonic time ``now_s`` (s); the line to log now, or ``None``."""
        self.count += 1
        if now_s - self.logged_s < self.period_s:
            return None
        new = self.count - self.logged_count
        self.logged_count, self.logged_s = self.count, now_s
        if self.count == 1:
            return message
        return f"{message} ({new} times since the last report, {self.count} in all)"


@dataclass
class CallbackFailures:
    """Failures of one callback: how many, the last error, when (monotonic s)."""

    count: int = 0
    last_error: str = ""
    last_s: float = 0.0
    logged_count: int = 0
    logged_s: float = -float("inf")


def _error_text(error: BaseException) -> str:
    text = shorten(str(error), 300)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _takes_no_arguments(callback: Callable[..., Any]) -> bool:
    try:
        inspect.signature(callback).bind()
        return True
    except (TypeError, ValueError):
        return False


def _takes_two_arguments(callback: Callable[..., Any]) -> bool:
    """Whether a subscription callback wants ``(message, message_info)`` (rclpy's rule)."""
    try:
        inspect.signature(callback).bind(object())
        return False
    except TypeError:
        pass
    try:
        inspect.signature(callback).bind(object(), object())
        return True
    except (TypeError, ValueError):
        return False


class GuardedNode(Node):
    """``rclpy.node.Node`` whose subscription, service and timer callbacks are guarded (module docstring)."""

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        # Set before Node.__init__: rclpy creates its parameter services there, through create_service.
        self._guard_failures: dict[str, CallbackFailures] = {}
        self._guard_refusals: dict[str, CallbackFailures] = {}
        self._recurring: dict[str, RecurringWarning] = {}
        super().__init__(node_name, **kwargs)

    # -- the guard ---------------------------------------------------------------------------------

    @property
    def diagnostic_name(self) -> str:
        """Name of this node's ``DiagnosticStatus``: the node name, with its namespace when it has one."""
        return self.get_fully_qualified_name().lstrip("/")

    def callback_failures(self) -> dict[str, CallbackFailures]:
        """Failures by callback label (``subscription /joint_states``, ``service ~/start``, …)."""
        return dict(self._guard_failures)

    @property
    def callback_failure_count(self) -> int:
        return sum(failures.count for failures in self._guard_failures.values())

    def refusals(self) -> dict[str, CallbackFailures]:
        """Inputs the node refused by its own checks, by input label (see :meth:`count_refusal`)."""
        return dict(self._guard_refusals)

    def warn_recurring(self, label: str, message: str) -> None:
        """Log a warning that may recur (:class:`RecurringWarning`): at once, then once per period with the count."""
        recurring = self._recurring.setdefault(label, RecurringWarning())
        line = recurring.line(message, time.monotonic())
        if line is not None:
            self.get_logger().warning(line)

    def recurring_counts(self) -> dict[str, int]:
        """How often each recurring warning occurred, by label (for the diagnostics)."""
        return {label: recurring.count for label, recurring in self._recurring.items()}

    def count_refusal(self, label: str, reason: str) -> None:
        """Count an input the node refused (``reason`` says why); reported by :meth:`guard_report`.

        Only the count and the last reason are kept: the node logs and reports the refusal itself.
        """
        refusals = self._guard_refusals.setdefault(label, CallbackFailures())
        refusals.count += 1
        refusals.last_error = shorten(reason, 300)
        refusals.last_s = time.monotonic()

    def _record_failure(self, label: str, error: BaseException) -> str:
        failures = self._guard_failures.setdefault(label, CallbackFailures())
        now = time.monotonic()
        failures.count += 1
        failures.last_error = _error_text(error)
        failures.last_s = now
        if failures.count == 1 or now - failures.logged_s >= LOG_PERIOD_S:
            new = failures.count - failures.logged_count
            prefix = "" if failures.count == 1 else f"{new} more failures ({failures.count} in all); last: "
            self.get_logger().error(f"{label} refused its input: {prefix}{failures.last_error}")
            failures.logged_count, failures.logged_s = failures.count, now
        return failures.last_error

    def guarded(self, label: str, callback: Callable[..., Any], *, response: Callable[[], Any] | None = None) -> Any:
        """``callback`` inside the guard; ``response`` builds a service's answer when it fails.

        The guard holds the node weakly, as rclpy's own services do: a node whose
        constructor fails is freed at once rather than kept alive by its callbacks.
        """
        node_ref = weakref.ref(self)

        def record(error: Exception) -> str:
            node = node_ref()
            return node._record_failure(label, error) if node is not None else _error_text(error)

        if _takes_two_arguments(callback) and response is None:

            def guarded_with_info(message: Any, info: Any) -> Any:
                try:
                    return callback(message, info)
                except Exception as error:  # noqa: BLE001 - the guard: count, refuse, report
                    record(error)
                    return None

            return guarded_with_info

        if response is not None:

            def guarded_service(request: Any, default: Any) -> Any:
                try:
                    return callback(request, default)
                except Exception as error:  # noqa: BLE001 - the guard: count, refuse, report
                    text = record(error)
                    answer = response()
                    if hasattr(answer, "success"):
                        answer.success = False
                    if hasattr(answer, "message"):
                        answer.message = f"refused: {text}"
                    return answer

            return guarded_service

        def guarded_call(*arguments: Any) -> Any:
            try:
                return callback(*arguments)
            except Exception as error:  # noqa: BLE001 - the guard: count, refuse, report
                record(error)
                return None

        return guarded_call

    def guard_report(self, status: DiagnosticStatus) -> DiagnosticStatus:
        """``status`` named :attr:`diagnostic_name`, with the callback failures (ERROR while recent)."""
        status.name = self.diagnostic_name
        now = time.monotonic()
        for label, refusals in self._guard_refusals.items():
            status.values.append(KeyValue(key=f"refused/{label}", value=str(refusals.count)))
            if now - refusals.last_s <= RECENT_S:
                status.level = max(status.level, DiagnosticStatus.WARN)
                note = f"refused {label} ({refusals.count} so far): {refusals.last_error}"
                status.message = shorten(note if status.message in ("", "ok") else f"{status.message}; {note}")
        failures = self._guard_failures
        total = sum(item.count for item in failures.values())
        status.values.append(KeyValue(key="callback_failures", value=str(total)))
        if not total:
            return status
        label, last = max(failures.items(), key=lambda item: item[1].last_s)
        status.values.append(KeyValue(key="last_callback_failure", value=f"{label}: {last.last_error}"))
        if time.monotonic() - last.last_s <= RECENT_S:
            status.level = DiagnosticStatus.ERROR
            status.message = shorten(f"{label} refused {last.count} inputs: {last.last_error}; {status.message}")
        return status

    # -- diagnostics -------------------------------------------------------------------------------

    def start_diagnostics(
        self,
        status: Callable[[], DiagnosticStatus],
        *,
        stamp_ns: Callable[[], int] | None = None,
        period_s: float | None = DIAGNOSTICS_PERIOD_S,
        clock: Clock | None = None,
    ) -> None:
        """Publish ``status()`` with the guard's report on ``/diagnostics`` every ``period_s`` (``None``: only on
        :meth:`publish_diagnostics`), stamped ``stamp_ns()`` (default the node clock) and timed on ``clock``."""
        self._diagnostics_status = status
        self._diagnostics_stamp_ns = stamp_ns or (lambda: int(self.get_clock().now().nanoseconds))
        self._diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        if period_s is not None:
            self.create_timer(period_s, self.publish_diagnostics, clock=clock)

    def publish_diagnostics(self) -> None:
        """Publish the node's status now (see :meth:`start_diagnostics`)."""
        array = DiagnosticArray()
        array.header.stamp = time_message(max(self._diagnostics_stamp_ns(), 0))
        array.status = [self.guard_report(self._diagnostics_status())]
        self._diagnostics_publisher.publish(array)

    # -- guarded factories (same signatures as rclpy's) ---------------------------------------------

    def create_subscription(
        self, msg_type: Any, topic: str, callback: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Subscription:
        return super().create_subscription(
            msg_type, topic, self.guarded(f"subscription {topic}", callback), *args, **kwargs
        )

    def create_service(
        self, srv_type: Any, srv_name: str, callback: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Service:
        return super().create_service(
            srv_type,
            srv_name,
            self.guarded(f"service {srv_name}", callback, response=srv_type.Response),
            *args,
            **kwargs,
        )

    def create_timer(
        self, timer_period_sec: float, callback: Callable[..., Any] | None, *args: Any, **kwargs: Any
    ) -> Timer:
        if callback is not None:
            guarded = self.guarded(f"timer {getattr(callback, '__name__', 'callback')}", callback)
            if _takes_no_arguments(callback):
                # The events executor passes a TimerInfo to any callback that takes an argument.
                plain: Callable[[], Any] = guarded
                callback = lambda: plain()  # noqa: E731 - a zero-argument wrapper, as the original
            else:
                callback = guarded
        return super().create_timer(timer_period_sec, callback, *args, **kwargs)
