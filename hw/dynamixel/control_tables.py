"""Control tables of the supported Dynamixel models and conversions to SI units.

Addresses and sizes are from the ROBOTIS e-manual control tables
(emanual.robotis.com/docs/en/dxl/...: x/xl330-m288, x/xl430-w250, mx/mx-64, mx/mx-64-2,
mx/mx-106, mx/mx-106-2, x/xl320), cross-checked against published driver
tables (e.g. DynamixelSDK examples: X-series torque enable 64, goal position
116, present position 132; MX protocol-1.0 torque enable 24, goal position 30,
present position 36, present speed 38, present load 40).

The zero angle is the centre of the encoder range (count 2048 of 4096; 512 of
1024 on the XL320, whose 1024 counts span 300°). Signed protocol-2.0 fields are
two's complement; the protocol-1.0 / XL320 speed and load fields are
sign-magnitude with bit 10 set for the clockwise direction. Registers, tables
and conversions: :mod:`frictionsim.hw.serialbus.registers`.
"""

from __future__ import annotations

import math

from frictionsim.hw.serialbus.registers import ControlTable, Encoding, Register

_U = Encoding.UNSIGNED
_S = Encoding.SIGNED
_SM = Encoding.SIGN_MAGNITUDE


def _x_series(model: str, model_number: int, current_unit: float | None) -> ControlTable:
    """Protocol 2.0 X-series layout shared by XL330, XL430 and MX(2.0) firmware (the XL430
    has no current sensor: its address 126 is Present Load, read as no current)."""
    return ControlTable(
        model=model, protocol=2, model_number=model_number,
        torque_enable=Register(64, 1), operating_mode=Register(11, 1),
        p_gain=Register(84, 2),  # Position P Gain
        goal_position=Register(116, 4, _S), present_position=Register(132, 4, _S),
        present_velocity=Register(128, 4, _S), present_load=None,
        present_pwm=Register(124, 2, _S),
        present_current=None if current_unit is None else Register(126, 2, _S),
        present_input_voltage=Register(144, 2), present_temperature=Register(146, 1),
        position_centre=2048, position_max=4095, rad_per_count=2.0 * math.pi / 4096,
        velocity_unit=0.229, current_unit=current_unit,
    )


def _mx_protocol1(model: str, model_number: int) -> ControlTable:
    """MX-64 / MX-106 with protocol 1.0 firmware (no operating mode register: mode by angle limits)."""
    return ControlTable(
        model=model, protocol=1, model_number=model_number,
        torque_enable=Register(24, 1), operating_mode=None,
        p_gain=Register(28, 1),
        goal_position=Register(30, 2), present_position=Register(36, 2),
        present_velocity=Register(38, 2, _SM), present_load=Register(40, 2, _SM),
        present_pwm=None, present_current=Register(68, 2),
        present_input_voltage=Register(42, 1), present_temperature=Register(43, 1),
        position_centre=2048, position_max=4095, rad_per_count=2.0 * math.pi / 4096,
        velocity_unit=0.114, current_unit=0.0045, current_offset=2048,
        angle_limits=(Register(6, 2), Register(8, 2)),
        firmware_register=Register(2, 1), id_register=Register(3, 1), p_gain_max=254,
    )


XL330_M288 = _x_series("XL330-M288", 1200, current_unit=0.001)
XL330_M077 = _x_series("XL330-M077", 1190, current_unit=0.001)
XL430_W250 = _x_series("XL430-W250", 1060, current_unit=None)
MX64_P2 = _x_series("MX-64(2.0)", 311, current_unit=0.00336)
MX106_P2 = _x_series("MX-106(2.0)", 321, current_unit=0.00336)
MX64_P1 = _mx_protocol1("MX-64", 310)
MX106_P1 = _mx_protocol1("MX-106", 320)
XL320 = ControlTable(
    model="XL-320", protocol=2, model_number=350,
    torque_enable=Register(24, 1), operating_mode=Register(11, 1),  # Control Mode: 1 wheel, 2 joint
    p_gain=Register(29, 1),
    goal_position=Register(30, 2), present_position=Register(37, 2),
    present_velocity=Register(39, 2, _SM), present_load=Register(41, 2, _SM),
    present_pwm=None, present_current=None,
    present_input_voltage=Register(45, 1), present_temperature=Register(46, 1),
    position_centre=512, position_max=1023, rad_per_count=math.radians(300.0) / 1024,
    velocity_unit=0.111, position_mode=2,
    firmware_register=Register(2, 1), id_register=Register(3, 1), p_gain_max=254,
)

TABLES: tuple[ControlTable, ...] = (XL330_M288, XL330_M077, XL430_W250, MX64_P1, MX64_P2,
                                    MX106_P1, MX106_P2, XL320)


def table_for(model: str, protocol: int) -> ControlTable:
    """The table of ``model`` (e.g. ``"XL330-M288"``, ``"MX-64"``, ``"XL-320"``) under ``protocol``."""
    key = model.upper().replace("_", "-").replace("(2.0)", "")
    for table in TABLES:
        if table.model.upper().replace("(2.0)", "") == key and table.protocol == protocol:
            return table
    known = ", ".join(f"{t.model} (protocol {t.protocol})" for t in TABLES)
    raise KeyError(f"unsupported Dynamixel model {model!r} with protocol {protocol}; known: {known}")
