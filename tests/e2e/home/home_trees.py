"""What the Home tests compare before and after an attack: a tree as names with their type,
link target and (but for the database and its journal files, which the server writes all
along) content hash and inode."""
import hashlib
import os
import stat


def tree_of(root):
    out = {}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(base, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            elif stat.S_ISREG(st.st_mode):
                if name.startswith("shellctl.db"):
                    out[rel] = ("file", "database", st.st_ino)
                else:
                    with open(path, "rb") as f:
                        out[rel] = ("file", hashlib.sha256(f.read()).hexdigest(), st.st_ino)
            else:
                out[rel] = ("other", stat.S_IFMT(st.st_mode), st.st_ino)
    return out
