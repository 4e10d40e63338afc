"""A fixture module."""

def dumps(obj, *, indent=None, sort_keys=False):
    """Serialize obj to a JSON formatted string. Use indent to pretty-print."""
    pass


class JSONDecoder(object):
    '''Simple JSON decoder for Python data structures.

    More text.
    '''

    def _private(self):
        """Private helpers are left out of the pairs."""

    def decode(self, s):
        """Short."""
