"""The Feetech STS3215 control table and its units.

Addresses from the Feetech SMS/STS memory table (as used by the ``scservo_sdk``
examples and LeRobot's ``STS_SMS_SERIES_CONTROL_TABLE``): model number 3 (u16,
777 for the STS3215), id 5, operating mode 33 (0 = position), torque enable 40,
goal position 42, lock 55 (EEPROM writes need it at 0), present position 56,
present speed 58, present load 60, present voltage 62, present temperature 63,
present current 69; P coefficient 21 (EEPROM, 1 byte, factory 32).

Units: position 4096 counts per turn, 0 at count 2048 where the bench arm hangs
down; speed in counts/s (sign-magnitude, bit 15), i.e. 60/4096 rpm per unit;
load in 0.1 % of the maximum (sign-magnitude, bit 10); voltage 0.1 V;
temperature 1 °C; current 6.5 mA per unit. The count is assumed to grow
counter-clockwise seen from the horn, as on Dynamixel servos; the direction bit
of the Phase register (18) reverses it on some units, so check a recording's
sign against the arm before identifying.
"""

from __future__ import annotations

import math

from frictionsim.hw.serialbus.registers import ControlTable, Encoding, Register

SM = Encoding.SIGN_MAGNITUDE

STS3215 = ControlTable(
    model="STS3215", protocol=1, model_number=777,
    torque_enable=Register(40, 1), operating_mode=Register(33, 1),
    p_gain=Register(21, 1),
    goal_position=Register(42, 2), present_position=Register(56, 2),
    present_velocity=Register(58, 2, SM, sign_bit=15), present_load=Register(60, 2, SM),
    present_pwm=None, present_current=Register(69, 2),
    present_input_voltage=Register(62, 1), present_temperature=Register(63, 1),
    position_centre=2048, position_max=4095, rad_per_count=2.0 * math.pi / 4096,
    velocity_unit=60.0 / 4096, current_unit=0.0065, position_mode=0,
    model_number_register=Register(3, 2), firmware_register=Register(0, 1),
    id_register=Register(5, 1), p_gain_max=254, family="feetech", load_full_scale=1000,
    eeprom_lock=Register(55, 1),
)

TABLES: tuple[ControlTable, ...] = (STS3215,)
