# Warning flags, probed per compiler so an older or different compiler does not fail the build.
include(CheckCCompilerFlag)
set(BATON_C_WARNINGS "")
foreach(flag -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter -Wpointer-arith
             -Wmissing-prototypes)
  string(MAKE_C_IDENTIFIER "HAVE${flag}" var)
  check_c_compiler_flag(${flag} ${var})
  if(${var})
    list(APPEND BATON_C_WARNINGS ${flag})
  endif()
endforeach()
if(BATON_WERROR)
  list(APPEND BATON_C_WARNINGS -Werror)
endif()

set(BATON_SAN_FLAGS "")
if(BATON_SANITIZE)
  set(BATON_SAN_FLAGS -fsanitize=${BATON_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
endif()

# baton_target_flags(<target>): the project's warnings and sanitizers on one target.
function(baton_target_flags tgt)
  target_compile_options(${tgt} PRIVATE $<$<COMPILE_LANGUAGE:C>:${BATON_C_WARNINGS}>
                                        $<$<COMPILE_LANGUAGE:C,CXX>:${BATON_SAN_FLAGS}>)
  target_link_options(${tgt} PRIVATE ${BATON_SAN_FLAGS})
endfunction()
