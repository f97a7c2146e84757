"""eRob joints (CiA 402 drives) over EtherCAT with pysoem.

- :mod:`frictionsim.hw.ethercat.cia402`: the drive state machine (statusword, controlword);
- :mod:`frictionsim.hw.ethercat.pdo`: the CSP/CST process-data mapping and its SDO set-up;
- :mod:`frictionsim.hw.ethercat.drive`: :class:`Cia402Drive`, bring-up, cyclic exchange, safe stop;
- :mod:`frictionsim.hw.ethercat.servo`: :class:`ErobServo`, the bench recorder's view of a joint.
"""
