# Installs the built project into WORK_DIR/prefix, configures and builds EXAMPLES_DIR against
# it as a standalone project, and runs two examples (the second on the tiny Hugging Face model).
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# The LibTorch the project was built against: its CMAKE_PREFIX_PATH, '|'-separated (a ';' list
# does not survive add_test's command line), after the package's own prefix.
# Not through run(): its ${ARGN} would split the list at each ';'.
string(REPLACE "|" ";" torch_prefix "${TORCH_PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${EXAMPLES_DIR} -B ${WORK_DIR}/examples -G ${GENERATOR}
                "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix;${torch_prefix}" -DTorch_DIR=${TORCH_DIR}
                -DCMAKE_BUILD_TYPE=Release RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "failed (${rc}): configuring ${EXAMPLES_DIR} against ${WORK_DIR}/prefix")
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/examples --parallel 2)
run(${WORK_DIR}/examples/functional_accumulation --steps 2)
# gradcache::hf from the package: the tiny test model, one step each way.
run(${WORK_DIR}/examples/hf_dual_encoder ${HF_MODEL_DIR})
