"""eRob joints (CiA 402 drives) over EtherCAT with pysoem.

- :mod:`hw.ethercat.cia402`: the drive state machine (statusword, controlword);
- :mod:`hw.ethercat.pdo`: the CSP/CST process-data mapping and its SDO set-up;
- :mod:`hw.ethercat.drive`: :class:`Cia402Drive`, bring-up, cyclic exchange, safe stop;
- :mod:`hw.ethercat.servo`: :class:`ErobServo`, the bench recorder's view of a joint.
"""
