from boards.management.refresh import refresh_command

Command = refresh_command("refresh_histograms")
