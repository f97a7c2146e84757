"""What every serial servo bus shares: framing, registers, errors, transactions, the servo adapter.

- :mod:`frictionsim.hw.serialbus.framing`: packet records and the resynchronising stream parser;
- :mod:`frictionsim.hw.serialbus.checksum_framing`: the ``FF FF … checksum`` frames of Dynamixel 1.0
  and Feetech;
- :mod:`frictionsim.hw.serialbus.dialect`: the interface a protocol implements (Dynamixel 1.0 and 2.0
  in :mod:`frictionsim.hw.dynamixel`, Feetech in :mod:`frictionsim.hw.feetech`: siblings);
- :mod:`frictionsim.hw.serialbus.bus`: :class:`~frictionsim.hw.serialbus.bus.SerialBus`, transactions with
  timeouts and retries, for any dialect;
- :mod:`frictionsim.hw.serialbus.registers`: control-table registers and unit conversions;
- :mod:`frictionsim.hw.serialbus.servo`: the register-level servo adapter of the bench recorder;
- :mod:`frictionsim.hw.serialbus.errors`: the exceptions, all :class:`frictionsim.hw.servo.ServoError`.

A new serial servo family is a dialect, its control tables and an ``open``.
"""
