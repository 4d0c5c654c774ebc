# Warnings are errors everywhere: g++ 11 (Ubuntu 22.04, RHEL 9) and g++ 12 must
# both build warning-free.
add_compile_options(-Wall -Wextra -Werror -Wno-error=deprecated-declarations)
