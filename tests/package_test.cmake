# Installs the built project into WORK_DIR/prefix, configures and builds EXAMPLES_DIR against
# it as a standalone project, and runs two examples (the second on the tiny Hugging Face model);
# then runs the installed program itself (a tiny train and an encode), which must find the
# LibTorch it was built against through its RUNPATH, with no LD_LIBRARY_PATH.
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

# The installed program, as a user starts it: no LD_LIBRARY_PATH (the shared libraries it needs
# are found through its RUNPATH), a tiny task (a 40-piece tokenizer, a 16-wide one-layer encoder).
set(program ${WORK_DIR}/prefix/bin/gradcache)
if(EXISTS ${program})
  set(data ${WORK_DIR}/program)
  file(MAKE_DIRECTORY ${data})
  set(pairs "")
  set(corpus "")
  foreach(i RANGE 0 63)
    math(EXPR n "${i} % 5")
    string(APPEND pairs "which cat is red number ${n}\tthe red cat lives here ${n}\n")
    string(APPEND corpus "d${i}\tthe red cat lives here ${n}\n")
  endforeach()
  file(WRITE ${data}/train.tsv "${pairs}")
  file(WRITE ${data}/corpus.tsv "${corpus}")
  run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${program} train --train-file ${data}/train.tsv
      --vocab-size 40 --dim 16 --heads 2 --layers 1 --ffn-dim 32 --batch-size 16 --chunk-size 8 --steps 2
      --eval false --output ${data}/run)
  run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${program} encode --run ${data}/run
      --corpus ${data}/corpus.tsv --output ${data}/embeddings)
  if(NOT EXISTS ${data}/embeddings/manifest.json)
    message(FATAL_ERROR "the installed program's encode wrote no ${data}/embeddings/manifest.json")
  endif()
endif()
