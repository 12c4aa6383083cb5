# Finds LLVM 19 through llvm-config and builds the list of static libraries
# fz links: the NVPTX target, the optimisation pipeline, the bitcode reader
# and linker (for libdevice), plus zstd and zlib as static archives.
# llvm-config's --system-libs is left out on purpose: it names z3 and xml2,
# which the NVPTX path never calls and which the GPU machine lacks.
find_program(FZ_LLVM_CONFIG NAMES llvm-config-19 llvm-config
             PATHS /usr/lib/llvm-19/bin NO_DEFAULT_PATH)
find_program(FZ_LLVM_CONFIG NAMES llvm-config-19 llvm-config)
if(NOT FZ_LLVM_CONFIG)
  message(FATAL_ERROR "llvm-config for LLVM 19 not found (apt-get install llvm-19-dev)")
endif()
execute_process(COMMAND ${FZ_LLVM_CONFIG} --version OUTPUT_VARIABLE FZ_LLVM_VERSION
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT FZ_LLVM_VERSION MATCHES "^19\\.")
  message(FATAL_ERROR "fz needs LLVM 19, found ${FZ_LLVM_VERSION} at ${FZ_LLVM_CONFIG}")
endif()
execute_process(COMMAND ${FZ_LLVM_CONFIG} --includedir OUTPUT_VARIABLE FZ_LLVM_INCLUDE_DIR
                OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${FZ_LLVM_CONFIG} --bindir OUTPUT_VARIABLE FZ_LLVM_BIN_DIR
                OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${FZ_LLVM_CONFIG} --link-static --libfiles
                        nvptx core target analysis passes bitreader bitwriter linker irreader
                OUTPUT_VARIABLE FZ_LLVM_LIBFILES OUTPUT_STRIP_TRAILING_WHITESPACE)
separate_arguments(FZ_LLVM_LIBFILES UNIX_COMMAND "${FZ_LLVM_LIBFILES}")
find_library(FZ_ZSTD_STATIC NAMES libzstd.a REQUIRED)
find_library(FZ_ZLIB_STATIC NAMES libz.a REQUIRED)
# LLVM is C++: link libstdc++ dynamically (allowed on the GPU machine).
set(FZ_LLVM_STATIC_LIBS ${FZ_LLVM_LIBFILES} ${FZ_ZSTD_STATIC} ${FZ_ZLIB_STATIC} stdc++ m dl pthread rt)
message(STATUS "fz: LLVM ${FZ_LLVM_VERSION} (${FZ_LLVM_CONFIG}), linked statically")
