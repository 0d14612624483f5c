"""Recording without model changes: each module here installs one kind of hook and returns a
function that removes it again. They only talk to the Recorder."""
