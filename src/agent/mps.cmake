# MPS mode for mGPU cards: worker environment, per-card control daemon, enforcement choice.
carve_library(carve_mps SRCS
  mps/mps_control.cc mps/mps_env.cc
  DEPS carve_common)
carve_test(mps_test
  SRCS mps/mps_control_test.cc mps/mps_env_test.cc
  DEPS carve_mps)
