# Writes the installed config.toml from docs/config.md's TOML block: every
# key commented out (so the compiled-in defaults apply and `gpuslice
# version` says so), every explanation kept. One text for the doc and the
# file, so they cannot drift apart.
#   cmake -DDOC=docs/config.md -DOUT=config.toml -P ConfigFile.cmake
file(READ "${DOC}" doc)
string(FIND "${doc}" "```toml\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC}: no ```toml block")
endif()
math(EXPR start "${start} + 8")
string(SUBSTRING "${doc}" ${start} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} block)
string(REPLACE ";" "\\;" block "${block}")
string(REPLACE "\n" ";" lines "${block}")
set(out "# gpuslice configuration. Every key is commented out: its value here is the\n")
string(APPEND out "# default (docs/config.md; `gpuslice version` prints the values in effect).\n")
string(APPEND out "# Uncomment a key to change it. An unknown key is an error.\n\n")
foreach(line IN LISTS lines)
  if(line MATCHES "^[a-z]")
    string(APPEND out "#${line}\n")
  else()
    string(APPEND out "${line}\n")
  endif()
endforeach()
file(WRITE "${OUT}" "${out}")
