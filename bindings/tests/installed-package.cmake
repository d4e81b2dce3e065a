# ctest python.installed: `cmake --install` into a scratch prefix, then the package imported from
# there alone (BUILD_DIR, PYTHON and PACKAGE_DIR come from bindings/CMakeLists.txt).
set(prefix ${BUILD_DIR}/python-install-check)
file(REMOVE_RECURSE ${prefix})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${err}")
endif()
set(check [=[
import os, sys
import cnuas, cnuas._cnuas as core
prefix = sys.argv[1]
for what, path in (("cnuas", cnuas.__file__), ("cnuas._cnuas", core.__file__)):
    if not os.path.realpath(path).startswith(os.path.realpath(prefix)):
        sys.exit("%s was loaded from %s, not the installed prefix" % (what, path))
maps = open("/proc/self/maps").read()
libs = {l.split()[-1] for l in maps.splitlines() if "libcnuas.so" in l}
if not libs or not all(os.path.realpath(l).startswith(os.path.realpath(prefix)) for l in libs):
    sys.exit("libcnuas loaded from %s, not the installed prefix" % sorted(libs))
r = cnuas.simulate(traffic="incast", topology="star:hosts=3", senders=2, size="100KB")
done = int(r.flows["ok"].sum())
if done != 2:
    sys.exit("the installed package ran %d of 2 flows" % done)
print("installed package OK:", os.path.dirname(cnuas.__file__))
]=])
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH
                        --unset=LD_LIBRARY_PATH PYTHONDONTWRITEBYTECODE=1
                        PYTHONPATH=${prefix}/${PACKAGE_DIR}
                        ${PYTHON} -c "${check}" ${prefix}
                WORKING_DIRECTORY ${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE ${prefix})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed package: ${out}${err}")
endif()
message(STATUS "${out}")
