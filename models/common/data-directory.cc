#include "data-directory.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ns3
{

namespace
{
namespace fs = std::filesystem;

bool
IsDir(const std::string& p)
{
    std::error_code ec;
    return !p.empty() && fs::is_directory(p, ec);
}

bool
IsFile(const std::string& p)
{
    std::error_code ec;
    return !p.empty() && fs::is_regular_file(p, ec);
}
} // namespace

std::vector<std::string>
CnuasShareRoots()
{
    std::vector<std::string> roots;
#ifdef CNUAS_SOURCE_TREE
    roots.emplace_back(CNUAS_SOURCE_TREE);
#endif
#ifdef CNUAS_INSTALL_SHARE_DIR
    roots.emplace_back(CNUAS_INSTALL_SHARE_DIR);
#endif
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec && exe.has_parent_path())
    {
        roots.push_back((exe.parent_path().parent_path() / "share" / "cnuas").string());
    }
    return roots;
}

std::vector<std::string>
CnuasDataSearchPath()
{
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("CNUAS_DATA_DIR"); env && *env)
    {
        dirs.emplace_back(env);
    }
    for (const std::string& root : CnuasShareRoots())
    {
        dirs.push_back(root + "/data");
    }
    return dirs;
}

std::string
CnuasDataDirectory()
{
    for (const std::string& d : CnuasDataSearchPath())
    {
        if (IsDir(d))
        {
            return d;
        }
    }
    return "";
}

std::string
CnuasDataFile(const std::string& relative)
{
    std::string searched;
    for (const std::string& d : CnuasDataSearchPath())
    {
        const std::string p = d + "/" + relative;
        if (IsFile(p))
        {
            return p;
        }
        searched += (searched.empty() ? "" : ", ") + d;
    }
    throw std::runtime_error("data file '" + relative + "' not found in " + searched +
                             " (set CNUAS_DATA_DIR to the data/ directory of a Cnuas tree)");
}

std::string
CnuasShareFile(const std::string& relative)
{
    for (const std::string& root : CnuasShareRoots())
    {
        const std::string p = root + "/" + relative;
        if (IsFile(p))
        {
            return p;
        }
    }
    return "";
}

std::string
CnuasSourceTree()
{
#ifdef CNUAS_SOURCE_TREE
    if (IsDir(CNUAS_SOURCE_TREE))
    {
        return CNUAS_SOURCE_TREE;
    }
#endif
    return "";
}

} // namespace ns3
