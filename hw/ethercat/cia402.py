"""The CiA 402 (IEC 61800-7-201) drive state machine: statusword → state, and the
controlword that moves the drive one transition towards a target state.

Statusword bits (0x6041): 0 ready to switch on, 1 switched on, 2 operation
enabled, 3 fault, 4 voltage enabled, 5 quick stop (active low), 6 switch on
disabled. Controlword commands (0x6040): shutdown 0x06, switch on 0x07, enable
operation 0x0F, disable voltage 0x00, quick stop 0x02, disable operation 0x07,
fault reset on a rising edge of bit 7 (0x80).
"""

from __future__ import annotations

from enum import Enum

from frictionsim.errors import ConfigurationError


class State(Enum):
    """Power states of a CiA 402 drive."""

    NOT_READY_TO_SWITCH_ON = "not ready to switch on"
    SWITCH_ON_DISABLED = "switch on disabled"
    READY_TO_SWITCH_ON = "ready to switch on"
    SWITCHED_ON = "switched on"
    OPERATION_ENABLED = "operation enabled"
    QUICK_STOP_ACTIVE = "quick stop active"
    FAULT_REACTION_ACTIVE = "fault reaction active"
    FAULT = "fault"


SHUTDOWN = 0x06
SWITCH_ON = 0x07
ENABLE_OPERATION = 0x0F
DISABLE_VOLTAGE = 0x00
QUICK_STOP = 0x02
DISABLE_OPERATION = 0x07
FAULT_RESET = 0x80

#: (mask, value) of the statusword for each state (CiA 402 table of device states).
_PATTERNS: tuple[tuple[int, int, State], ...] = (
    (0x4F, 0x00, State.NOT_READY_TO_SWITCH_ON),
    (0x4F, 0x40, State.SWITCH_ON_DISABLED),
    (0x6F, 0x21, State.READY_TO_SWITCH_ON),
    (0x6F, 0x23, State.SWITCHED_ON),
    (0x6F, 0x27, State.OPERATION_ENABLED),
    (0x6F, 0x07, State.QUICK_STOP_ACTIVE),
    (0x4F, 0x0F, State.FAULT_REACTION_ACTIVE),
    (0x4F, 0x08, State.FAULT),
)


def decode_statusword(statusword: int) -> State:
    """The drive state a statusword reports; ValueError for a pattern CiA 402 does not define."""
    for mask, value, state in _PATTERNS:
        if statusword & mask == value:
            return state
    raise ConfigurationError(f"statusword 0x{statusword:04X} is no CiA 402 state")


#: Order of the power-up path; a target is reached by walking it.
_PATH = (State.SWITCH_ON_DISABLED, State.READY_TO_SWITCH_ON, State.SWITCHED_ON,
         State.OPERATION_ENABLED)


def next_controlword(state: State, target: State, previous: int = 0) -> int:
    """The controlword for the next transition from ``state`` towards ``target``.

    ``target`` is one of switch on disabled, ready to switch on, switched on or
    operation enabled. A fault is reset by a rising edge of bit 7, so the
    command alternates 0x00 / 0x80 given the ``previous`` controlword. Quick stop
    active leaves through disable voltage.
    """
    if target not in _PATH:
        raise ConfigurationError(f"cannot drive towards {target.value}")
    if state is State.FAULT:
        return DISABLE_VOLTAGE if previous & FAULT_RESET else FAULT_RESET
    if state in (State.FAULT_REACTION_ACTIVE, State.NOT_READY_TO_SWITCH_ON):
        return DISABLE_VOLTAGE  # automatic transitions: wait
    if state is State.QUICK_STOP_ACTIVE:
        return DISABLE_VOLTAGE
    here, there = _PATH.index(state), _PATH.index(target)
    if here == there:
        return {State.SWITCH_ON_DISABLED: DISABLE_VOLTAGE, State.READY_TO_SWITCH_ON: SHUTDOWN,
                State.SWITCHED_ON: SWITCH_ON, State.OPERATION_ENABLED: ENABLE_OPERATION}[state]
    if there < here:  # power down: switch on disabled, ready or switched on directly
        return {State.SWITCH_ON_DISABLED: DISABLE_VOLTAGE, State.READY_TO_SWITCH_ON: SHUTDOWN,
                State.SWITCHED_ON: DISABLE_OPERATION}[target]
    return (SHUTDOWN, SWITCH_ON, ENABLE_OPERATION)[here]
