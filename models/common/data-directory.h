// Where the files Cnuas ships beside its code are found at run time (data/: flow-size CDFs, rack
// register maps; tools/plot: the plot scripts), so that a clone anywhere or an installed binary
// finds them without a path baked into its defaults. docs/cli.md §"Data files" documents the
// order.
#ifndef CNUAS_DATA_DIRECTORY_H
#define CNUAS_DATA_DIRECTORY_H

#include <string>
#include <vector>

namespace ns3
{

/**
 * The share roots searched, in order: the source tree recorded at configure time, the install
 * prefix's share/cnuas, and share/cnuas next to the running executable (../share/cnuas from its
 * bin/), for a relocated install. A root is listed whether or not it exists.
 */
std::vector<std::string> CnuasShareRoots();

/**
 * The data directories searched, in order: $CNUAS_DATA_DIR when set and not empty, then
 * ROOT/data for every share root.
 */
std::vector<std::string> CnuasDataSearchPath();

/// The first data directory that exists ("" if none does).
std::string CnuasDataDirectory();

/**
 * `relative` ("cdf/websearch.cdf") in the first data directory that has it. Throws
 * std::runtime_error naming every place searched when none has it.
 */
std::string CnuasDataFile(const std::string& relative);

/// `relative` ("tools/plot/plot-fct.py") under the first share root that has it; "" if none.
std::string CnuasShareFile(const std::string& relative);

/**
 * The source tree recorded at configure time when it still exists, else "" (an installed
 * binary whose source tree is gone).
 */
std::string CnuasSourceTree();

} // namespace ns3

#endif
