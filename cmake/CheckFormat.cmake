# Fails when a tracked C/C++ file is not clang-formatted (Google style, the
# repository's .clang-format).
execute_process(
  COMMAND git ls-files "*.cc" "*.h" "*.hpp" "*.c" "*.cu" "*.cuh"
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE files OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\n" ";" files "${files}")
if(files)
  execute_process(
    COMMAND clang-format --dry-run -Werror ${files}
    WORKING_DIRECTORY ${SOURCE_DIR}
    RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "clang-format: the files above need formatting")
  endif()
endif()
