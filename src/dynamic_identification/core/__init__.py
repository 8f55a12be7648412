"""Pure numerical core: no rclpy, no message types.

Data conventions used everywhere below this package:

* samples are rows, joints are columns: positions ``q`` have shape ``(N, n)``;
* time is float seconds (nanoseconds exist only at the ROS boundary);
* joint positions in rad, velocities in rad/s, accelerations in rad/s², joint
  torques in N·m, motor currents in A;
* an observation matrix has shape ``(N, n, p)``: sample, joint equation, parameter;
* standard parameters of joint ``j`` come in Pinocchio's ``toDynamicParameters()``
  order ``[m, mc_x, mc_y, mc_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` (inertia about
  the joint frame origin) followed by the enabled drive-chain terms
  ``[Ia, Fv, Fc, off]`` ([Gautier2013] eq. (3)).
"""
