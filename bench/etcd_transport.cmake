# etcd_transport_bench: the same etcd transactions through etcd's JSON gateway (carve's
# EtcdClient) and through gRPC, side by side (docs/benchmarks.md, docs/ha.md). Built only where
# gRPC's C++ library and code generator are installed (libgrpc++-dev, protobuf-compiler-grpc):
# carve does not need them, so neither `make test` nor CI does.
find_package(gRPC CONFIG QUIET)
find_package(Protobuf QUIET)
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin)
if(TARGET carve_store AND gRPC_FOUND AND Protobuf_FOUND AND GRPC_CPP_PLUGIN)
  set(proto ${CMAKE_CURRENT_LIST_DIR}/etcd_grpc/etcd_kv.proto)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/etcd_grpc)
  set(gen_srcs ${gen}/etcd_kv.pb.cc ${gen}/etcd_kv.grpc.pb.cc)
  add_custom_command(
    OUTPUT ${gen_srcs} ${gen}/etcd_kv.pb.h ${gen}/etcd_kv.grpc.pb.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen}
    COMMAND protobuf::protoc --proto_path=${CMAKE_CURRENT_LIST_DIR}/etcd_grpc --cpp_out=${gen}
            --grpc_out=${gen} --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN} ${proto}
    DEPENDS ${proto})
  add_executable(etcd_transport_bench ${CMAKE_CURRENT_LIST_DIR}/etcd_transport_bench.cc ${gen_srcs})
  target_include_directories(etcd_transport_bench PRIVATE ${gen})
  target_link_libraries(etcd_transport_bench PRIVATE carve_store gRPC::grpc++ protobuf::libprotobuf)
endif()
