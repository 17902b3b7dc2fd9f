# Fails when a tracked C/C++ file is not clang-formatted (Google style, the
# repository's .clang-format). The files are those `git ls-files` lists: it
# fails, saying why, when git is missing, fails, or lists none (a source
# tree that is no git checkout), rather than passing having checked nothing.
execute_process(
  COMMAND git ls-files "*.cc" "*.h" "*.hpp" "*.c" "*.cu" "*.cuh"
  WORKING_DIRECTORY ${SOURCE_DIR}
  RESULT_VARIABLE git_result
  OUTPUT_VARIABLE files OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_VARIABLE git_error ERROR_STRIP_TRAILING_WHITESPACE)
if(NOT git_result EQUAL 0)
  message(FATAL_ERROR
    "clang_format: `git ls-files` in ${SOURCE_DIR} failed (${git_result}): "
    "${git_error}\nThe check needs git (scripts/install-deps.sh installs it) "
    "and a git checkout.")
endif()
string(REPLACE "\n" ";" files "${files}")
if(NOT files)
  message(FATAL_ERROR
    "clang_format: `git ls-files` lists no C/C++ file in ${SOURCE_DIR}: "
    "nothing to check")
endif()
execute_process(
  COMMAND clang-format --dry-run -Werror ${files}
  WORKING_DIRECTORY ${SOURCE_DIR}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "clang-format: the files above need formatting")
endif()
