"""What every serial servo bus shares: framing, registers, errors, transactions, the servo adapter.

- :mod:`hw.serialbus.framing`: packet records and the resynchronising stream parser;
- :mod:`hw.serialbus.checksum_framing`: the ``FF FF … checksum`` frames of Dynamixel 1.0
  and Feetech;
- :mod:`hw.serialbus.dialect`: the interface a protocol implements (Dynamixel 1.0 and 2.0
  in :mod:`hw.dynamixel`, Feetech in :mod:`hw.feetech`: siblings);
- :mod:`hw.serialbus.bus`: :class:`~hw.serialbus.bus.SerialBus`, transactions with
  timeouts and retries, for any dialect;
- :mod:`hw.serialbus.registers`: control-table registers and unit conversions;
- :mod:`hw.serialbus.servo`: the register-level servo adapter of the bench recorder;
- :mod:`hw.serialbus.errors`: the exceptions, all :class:`hw.servo.ServoError`.

A new serial servo family is a dialect, its control tables and an ``open``.
"""
